// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// trace_engine_load.mjs — loads a trace.json with Chrome DevTools' own trace
// engine (npm @paulirish/trace_engine: the Performance panel's parser, its
// handlers and its tree builder) and prints what it kept, as JSON on stdout:
//
//   node trace_engine_load.mjs PACKAGE_DIR FILE
//
//   {"generic": bool,                      the engine took it as a generic (non-Chrome) trace
//    "tracks": {"PID/TID": {"entries": n,  slices and instants the engine took for the thread
//                           "in_tree": n,  of those, the ones its tree holds (an entry that
//                                          overlaps the one before it is dropped there)
//                           "dropped": [[ts, name]...]}},   the first few not in the tree
//    "flows": [[[pid, tid, ts, name], ...]]}  each flow the engine bound: the events it joins
//
// Exit status: 0 loaded; 1 the engine threw on the file; 2 the package could not be loaded.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import {pathToFileURL} from 'node:url';

const [pkgDir, file] = process.argv.slice(2);
// the engine's geometry helpers expect the browser's DOMRect
globalThis.DOMRect ??= class DOMRect {
  constructor(x = 0, y = 0, width = 0, height = 0) {
    Object.assign(this, {x, y, width, height});
  }
};
let Trace;
try {
  Trace = await import(pathToFileURL(path.join(pkgDir, 'models', 'trace', 'trace.js')).href);
} catch (e) {
  process.stderr.write(`trace_engine_load: cannot load the engine from ${pkgDir}: ${e.message}\n`);
  process.exit(2);
}
let parsed;
try {
  let data = fs.readFileSync(file);
  if (data[0] === 0x1f && data[1] === 0x8b)  // DevTools opens a .json.gz as it is
    data = zlib.gunzipSync(data);
  const doc = JSON.parse(data.toString('utf8'));
  const model = Trace.TraceModel.Model.createWithAllHandlers();
  await model.parse(doc.traceEvents ?? doc);
  parsed = model.parsedTrace().data;
} catch (e) {
  process.stderr.write(`trace_engine_load: the engine refused ${file}: ${e.stack}\n`);
  process.exit(1);
}
const tracks = {};
for (const [pid, proc] of parsed.Renderer.processes) {
  for (const [tid, thread] of proc.threads) {
    const t = {entries: thread.entries.length, in_tree: 0, dropped: []};
    for (const e of thread.entries) {
      if (parsed.Renderer.entryToNode.has(e))
        t.in_tree++;
      else if (t.dropped.length < 5)
        t.dropped.push([e.ts, e.name]);
    }
    tracks[`${pid}/${tid}`] = t;
  }
}
const flows = parsed.Flows.flows.map(f => f.map(e => [e.pid, e.tid, e.ts, e.name]));
process.stdout.write(JSON.stringify({generic: parsed.Meta.traceIsGeneric, tracks, flows}));
