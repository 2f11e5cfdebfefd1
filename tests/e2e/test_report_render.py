# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""report.md as a person reads it: rendered by a real Markdown renderer (Debian's python3-markdown,
with the tables extension GitHub's and pandoc's pipe tables match), from the golden captures'
reports (`gpuprobed report`, no tracing needed).

References: the Markdown source itself (each table's rows, each line meant as its own paragraph or
item) and report.json of the same report (the probes that never fired, the loss counters)."""
import html.parser
import json
import os
import subprocess

import pytest

import gp

markdown = pytest.importorskip("markdown", reason="python3-markdown (make deps) renders report.md")
GOLDEN = os.path.join(gp.ROOT, "tests", "golden")
CASES = sorted(c[:-4] for c in os.listdir(GOLDEN) if c.endswith(".gpz"))


class Blocks(html.parser.HTMLParser):
    """The rendered document's paragraphs and list items (each with its own text, not its children's),
    its tables (rows of cells) and its ordered lists (their items' count)."""

    def __init__(self):
        super().__init__()
        self.blocks, self.tables, self.ordered, self.open = [], [], [], []

    def handle_starttag(self, tag, attrs):
        if tag in ("p", "li"):
            self.open.append([tag, ""])
            if tag == "li" and self.lists and self.lists[-1] is not None:
                self.ordered[self.lists[-1]] += 1
        elif tag in ("ol", "ul"):
            self.lists.append(len(self.ordered) if tag == "ol" else None)
            if tag == "ol":
                self.ordered.append(0)
        elif tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self.tables[-1][-1].append("")
            self.open.append([tag, ""])

    def handle_endtag(self, tag):
        if tag in ("ol", "ul"):
            self.lists.pop()
        elif self.open and self.open[-1][0] == tag:
            kind, text = self.open.pop()
            if tag in ("td", "th"):
                self.tables[-1][-1][-1] = text.strip()
            else:
                self.blocks.append((kind, text.strip()))

    def handle_data(self, data):
        if self.open:
            self.open[-1][1] += data

    lists = None

    def reset(self):
        super().reset()
        self.lists = []


def source_tables(md):
    """Each pipe table of the Markdown source as its number of body rows."""
    tables, run = [], 0
    for line in md.split("\n") + [""]:
        if line.startswith("| "):
            run += 1
        elif run:
            tables.append(run - 2)  # less the header and the alignment row
            run = 0
    return tables


@pytest.fixture(scope="module", params=CASES)
def rendered(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param)
    p = subprocess.run([gp.GPUPROBED, "report", "-o", str(out), os.path.join(GOLDEN, request.param + ".gpz")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    md = (out / "report.md").read_text()
    with open(out / "report.json") as f:
        doc = json.load(f)
    parser = Blocks()
    parser.feed(markdown.markdown(md, extensions=["tables"]))
    return md, doc, parser


def test_every_table_renders_whole(rendered):
    md, _, html_ = rendered
    want = source_tables(md)
    assert want, "the report has tables"
    assert [len(t) - 1 for t in html_.tables] == want  # less the header row
    for t in html_.tables:
        assert all(len(row) == len(t[0]) for row in t), t[0]


def test_no_two_lines_run_together(rendered):
    """A line the report writes as its own paragraph or list item stays one: a renderer joins lines
    separated by a single line break into one paragraph, so no rendered block may hold a line break."""
    _, _, html_ = rendered
    joined = [text for kind, text in html_.blocks if "\n" in text]
    assert not joined, joined[:3]


def test_recommendations_estimate_and_do_apart(rendered):
    """Each finding one item of one numbered list (a renderer that ends the list at a paragraph it
    does not take as the item's restarts the numbers at 1), its Estimate and Do paragraphs apart."""
    md, doc, html_ = rendered
    if doc["recommendations"]:
        assert len(doc["recommendations"]) in html_.ordered, html_.ordered
    paragraphs = [text for kind, text in html_.blocks if kind == "p"]
    for f in doc["recommendations"]:
        estimate = [p for p in paragraphs if p.startswith(f"Estimate ({f['estimate']}): {f['method']}")]
        do = [p for p in paragraphs if p.startswith("Do: ") and f["action"] in p]
        assert estimate and do, f["id"]
        assert not any(p.startswith("Estimate") and "Do: " in p for p in paragraphs)


def test_probes_that_never_fired_in_one_line(rendered):
    """The section's tables hold each probe pair (entry and return at one place) of which a probe
    fired, with report.json's hits; the pairs that never fired are counted in one paragraph."""
    md, doc, html_ = rendered
    places = {}
    for r in doc["instrumentation"]:
        places.setdefault((r["target"], r["pid"], r["offset"]), []).append(r)
    fired = {k: v for k, v in places.items() if any(r["hits"] for r in v)}
    idle = [r for k, v in places.items() if k not in fired for r in v]
    section = md[md.index("## Instrumentation"):md.index("## Loss counters")]
    shown = sorted(line.split("|")[2].strip() for line in section.split("\n") if line.startswith("| `"))
    assert shown == sorted(off for _, _, off in fired), "a row for each place a probe fired at, no other"
    lines = [p for kind, p in html_.blocks if p.startswith("Never fired:")]
    if idle:
        files = {(r["target"], r["pid"]) for r in idle}
        assert lines == [f"Never fired: {len(idle)} of the {len(doc['instrumentation'])} probes placed, on "
                         f"{len(files)} file{'' if len(files) == 1 else 's'} (each in report.json's "
                         f"instrumentation with hits 0)."], lines
    else:
        assert lines == []


def test_loss_counters_named_when_not_zero(rendered):
    md, doc, html_ = rendered
    drops = doc["drops"]
    section = md[md.index("## Loss counters"):]
    nonzero = [k for k, v in drops.items() if v]
    for k, v in drops.items():
        assert (f"| {k} " in section) == bool(v), k
    if not nonzero:
        assert f"each of the {len(drops)} loss counters" in section
    else:
        assert f"The other {len(drops) - len(nonzero)} counters" in section
