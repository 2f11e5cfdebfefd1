// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// speedscope_load.js — loads a profile with speedscope's own importer, the
// code the web app runs when a file is dropped on it, and prints what
// speedscope made of it as JSON on stdout.
//
//   node speedscope_load.js PACKAGE_DIR FILE
//
// PACKAGE_DIR: an installed `speedscope` npm package. It ships no library,
// only the web app as one browser bundle (dist/release/speedscope-*.js, an
// esbuild IIFE) whose last statement renders the UI into document.body.
// So the bundle is run here up to that statement, with the few browser
// globals its modules touch while loading (location, localStorage,
// matchMedia) stubbed, and one line added that hands out the promise the
// app itself awaits for its import module; that module's exports
// (importProfileGroupFromText, ...) keep their names in the bundle.
//
// Exit status: 0 the file was imported as a speedscope file; 1 speedscope
// rejected it (threw, recognised nothing, or read it as another format);
// 2 the bundle could not be loaded or hooked (a version this script does
// not know).
'use strict';

const fs = require('fs');
const path = require('path');
const vm = require('vm');

function die(status, msg) {
	process.stderr.write(`speedscope_load: ${msg}\n`);
	process.exit(status);
}

function loadImporter(pkgDir) {
	const release = path.join(pkgDir, 'dist', 'release');
	let html, src;
	try {
		html = fs.readFileSync(path.join(release, 'index.html'), 'utf8');
	} catch (e) {
		die(2, `no speedscope release in ${pkgDir}: ${e.message}`);
	}
	const script = /<script src="(speedscope-[\w-]+\.js)">/.exec(html);
	if (!script)
		die(2, 'index.html names no speedscope bundle');
	src = fs.readFileSync(path.join(release, script[1]), 'utf8');

	// `(await X).importProfileGroupFromText(` names the import-module promise X.
	const promise = /\(await ([\w$]+)\)\.importProfileGroupFromText\(/.exec(src);
	// The UI starts right after the version banner; everything before it only defines.
	const banner = src.lastIndexOf('console.log(`speedscope v');
	if (!promise || banner < 0)
		die(2, `${script[1]}: import module or start-up statement not found (speedscope version not supported)`);

	const stub = { hash: '', protocol: 'file:', href: 'file:///speedscope/index.html', search: '' };
	globalThis.window = globalThis;
	globalThis.location = stub;
	globalThis.localStorage = {};
	globalThis.matchMedia = () => ({ matches: false, addEventListener() {}, addListener() {} });
	const code = src.slice(0, banner) + `globalThis.__gpSpeedscopeImport = ${promise[1]};})();`;
	try {
		vm.runInThisContext(code, { filename: script[1] });
	} catch (e) {
		die(2, `${script[1]} did not load: ${e.stack || e}`);
	}
	return globalThis.__gpSpeedscopeImport;
}

async function main() {
	const [pkgDir, file] = process.argv.slice(2);
	if (!pkgDir || !file)
		die(2, 'usage: node speedscope_load.js PACKAGE_DIR FILE');
	const text = fs.readFileSync(file, 'utf8');
	const mod = await loadImporter(pkgDir);
	if (!mod || typeof mod.importProfileGroupFromText !== 'function')
		die(2, 'the import module has no importProfileGroupFromText');

	// speedscope says which importer it picked on the console; keep stdout ours
	const said = [];
	const log = console.log;
	console.log = (...args) => said.push(args.join(' '));
	let group;
	try {
		group = await mod.importProfileGroupFromText(path.basename(file), text);
	} catch (e) {
		console.log = log;
		die(1, `speedscope rejected ${file}: ${e.message}`);
	}
	console.log = log;
	if (!group)
		die(1, `speedscope recognised no profile format in ${file}`);
	if (!said.includes('Importing as speedscope json file'))
		die(1, `speedscope read ${file} as another format: ${said.join('; ')}`);
	// a profile of a type it does not know comes back as a hole the UI would trip on
	group.profiles.forEach((p, i) => {
		if (!p)
			die(1, `speedscope made nothing of profile ${i} of ${file}`);
	});

	const out = {
		name: group.name,
		indexToView: group.indexToView,
		profiles: group.profiles.map((p) => {
			const frames = {};
			p.forEachFrame((f) => {
				frames[f.name] = (frames[f.name] || 0) + f.getTotalWeight();
			});
			return {
				name: p.getName(),
				unit: p.getWeightUnit(),
				// endValue - startValue
				totalWeight: p.getTotalWeight(),
				// the sum of the samples, from speedscope's call tree
				sampledWeight: p.getTotalNonIdleWeight(),
				// per frame name: the weight of the samples it is in
				frames,
			};
		}),
	};
	process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => die(2, e.stack || String(e)));
