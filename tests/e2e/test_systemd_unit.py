# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""make install / uninstall and the systemd unit (systemd/gpuprobed.service).

Installs into a DESTDIR and checks what lands where: the binary, the man page, the
unit with its ExecStart rewritten to $(PREFIX)/sbin, the configuration (never
overwritten: a second install leaves it and writes gpuprobed.conf.new). Then checks
the unit offline, as systemd itself would read it (systemd need not be PID 1):
`systemd-analyze verify` is clean and `systemd-analyze security` rates its exposure
at 3.0 or less.
"""
import os
import re
import shutil
import stat
import subprocess

import pytest

import gp

PREFIX = "/usr/local"
UNIT = "usr/local/lib/systemd/system/gpuprobed.service"
CONF = "etc/gpuprobed/gpuprobed.conf"
MAX_EXPOSURE = 3.0


def make(target, destdir):
    # -o: take the built binary as it is; this test is about installing it, not rebuilding it
    binary = os.path.relpath(gp.GPUPROBED, gp.ROOT)
    r = subprocess.run(["make", "-s", "-o", binary, f"BUILD={os.path.relpath(gp.BUILD, gp.ROOT)}", target,
                        f"DESTDIR={destdir}", f"PREFIX={PREFIX}"],
                       cwd=gp.ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"make {target} failed:\n{r.stdout}\n{r.stderr}"
    return r.stdout


@pytest.fixture
def destdir(tmp_path):
    d = tmp_path / "root"
    make("install", d)
    return d


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def unit_lines(path):
    """The unit's directives, key -> list of values (comments left out)."""
    out = {}
    for line in open(path):
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")):
            k, _, v = line.partition("=")
            out.setdefault(k, []).append(v)
    return out


def analyze():
    exe = shutil.which("systemd-analyze")
    if not exe:
        pytest.skip("systemd-analyze not installed (package systemd)")
    return exe


def checkable_copy(destdir, tmp_path):
    """The installed unit with ExecStart (and ExecStopPost) pointing at the DESTDIR binary: verify
    wants it to exist."""
    text = open(destdir / UNIT).read()
    text = text.replace(f"ExecStart={PREFIX}/sbin/", f"ExecStart={destdir}{PREFIX}/sbin/")
    text = text.replace(f"ExecStopPost=+{PREFIX}/sbin/", f"ExecStopPost=+{destdir}{PREFIX}/sbin/")
    d = tmp_path / "unit"
    d.mkdir()
    (d / "gpuprobed.service").write_text(text)
    return d / "gpuprobed.service"


def test_install_puts_every_file_in_place(destdir):
    binary = destdir / "usr/local/sbin/gpuprobed"
    assert os.access(binary, os.X_OK) and mode(binary) == 0o755
    assert mode(destdir / "usr/local/share/man/man8/gpuprobed.8") == 0o644
    assert mode(destdir / UNIT) == 0o644
    assert mode(destdir / CONF) == 0o644
    assert open(destdir / CONF).read() == open(os.path.join(gp.ROOT, "config/gpuprobed.conf")).read()
    assert not os.path.exists(str(destdir / CONF) + ".new")

    unit = unit_lines(destdir / UNIT)
    # ExecStart names where the binary is installed (PREFIX), never the DESTDIR staging copy
    assert unit["ExecStart"] == [f"{PREFIX}/sbin/gpuprobed --daemon --config /etc/gpuprobed/gpuprobed.conf"]
    text = open(destdir / UNIT).read()
    assert "@SBINDIR@" not in text and "@SYSCONFDIR@" not in text


def test_unit_directives(destdir):
    unit = unit_lines(destdir / UNIT)
    assert unit["Type"] == ["notify"] and unit["NotifyAccess"] == ["main"]
    assert unit["ExecReload"] == ["/bin/kill -HUP $MAINPID"]
    # after every stop, outside the sandbox ('+'): what a killed daemon and resumer left held
    assert unit["ExecStopPost"] == [f"+{PREFIX}/sbin/gpuprobed --release-holds"]
    assert unit["StateDirectory"] == ["gpuprobed"] and unit["StateDirectoryMode"] == ["0750"]
    assert set(unit["CapabilityBoundingSet"][0].split()) == {
        "CAP_BPF", "CAP_PERFMON", "CAP_SYS_PTRACE", "CAP_DAC_READ_SEARCH", "CAP_SYS_RESOURCE", "CAP_KILL"}
    # it must see every process and its /proc/PID/maps, and serve the host's network
    for forbidden in ("ProtectProc", "PrivatePIDs", "PrivateUsers", "PrivateNetwork", "ProcSubset"):
        assert forbidden not in unit, forbidden


def test_second_install_keeps_the_configuration(destdir):
    conf = destdir / CONF
    conf.write_text("[log]\nlevel = debug\n")
    out = make("install", destdir)
    assert conf.read_text() == "[log]\nlevel = debug\n"
    new = str(conf) + ".new"
    assert open(new).read() == open(os.path.join(gp.ROOT, "config/gpuprobed.conf")).read()
    assert mode(new) == 0o644
    assert "gpuprobed.conf.new" in out


def test_uninstall_leaves_the_configuration(destdir):
    make("uninstall", destdir)
    for path in ("usr/local/sbin/gpuprobed", "usr/local/share/man/man8/gpuprobed.8", UNIT):
        assert not os.path.exists(destdir / path), path
    assert os.path.exists(destdir / CONF)


def test_systemd_analyze_verify(destdir, tmp_path):
    exe = analyze()
    unit = checkable_copy(destdir, tmp_path)
    # Documentation=man:gpuprobed(8): verify runs man, which must find the installed page
    env = dict(os.environ, MANPATH=str(destdir / "usr/local/share/man"))
    r = subprocess.run([exe, "verify", str(unit)], capture_output=True, text=True, env=env, timeout=120)
    print(r.stdout + r.stderr)
    assert r.returncode == 0 and r.stdout + r.stderr == "", r.stdout + r.stderr


def test_systemd_analyze_security(destdir, tmp_path):
    exe = analyze()
    help_text = subprocess.run([exe, "--help"], capture_output=True, text=True).stdout
    if "--offline" not in help_text:
        pytest.skip("this systemd-analyze has no --offline (systemd < 250): security needs a running systemd")
    unit = checkable_copy(destdir, tmp_path)
    r = subprocess.run([exe, "security", "--offline=true", "--no-pager", str(unit)],
                       capture_output=True, text=True, timeout=120)
    out = r.stdout + r.stderr
    m = re.search(r"Overall exposure level for gpuprobed\.service: ([0-9.]+)", out)
    assert m, f"no overall exposure level in:\n{out}"
    score = float(m.group(1))
    print(f"systemd-analyze security: overall exposure {score} (at most {MAX_EXPOSURE})")
    assert score <= MAX_EXPOSURE, out
