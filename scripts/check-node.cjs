// Stops on a Node.js outside `engines` in package.json with one line that says what was found,
// what is supported and how to get it. Run before npm's own scripts (`preinstall`, `prestart`,
// `pretest`, `predemo`) and preloaded by the service's executable (`node --require`), ahead of any
// module that would fail to load on an old Node with a less helpful error.
// Written in the JavaScript every Node.js version parses (no const, arrows or template strings).
// `node scripts/check-node.cjs 20.19.0` checks the version given instead of the running one.
'use strict';

var path = require('path');

var range = require(path.join(__dirname, '..', 'package.json')).engines.node;

function parts(version) {
  var numbers = String(version).replace(/^v/, '').split('.');
  return [Number(numbers[0]) || 0, Number(numbers[1]) || 0, Number(numbers[2]) || 0];
}

function compare(a, b) {
  for (var i = 0; i < 3; i += 1) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

/** True when `version` satisfies every comparator of `range` (`>=22.15 <25`: `>=`, `>`, `<=`, `<`). */
function satisfies(version, range) {
  var found = parts(version);
  return range
    .split(/\s+/)
    .filter(Boolean)
    .every(function (comparator) {
      var match = /^(>=|<=|>|<)(\d+(?:\.\d+){0,2})$/.exec(comparator);
      if (match === null) throw new Error('check-node: unsupported engines comparator ' + comparator);
      var order = compare(found, parts(match[2]));
      if (match[1] === '>=') return order >= 0;
      if (match[1] === '>') return order > 0;
      if (match[1] === '<=') return order <= 0;
      return order < 0;
    });
}

var underTest = require.main === module ? process.argv[2] : undefined;
var version = underTest || process.versions.node;

if (!satisfies(version, range)) {
  process.stderr.write(
    'orders-read-model: Node.js ' +
      version +
      (underTest ? '' : ' (' + process.execPath + ')') +
      ' is not supported; it needs Node.js ' +
      range +
      ' (24 LTS, or 22.15 and later 22): install one with `nvm install 24`, `fnm install 24` or from https://nodejs.org/ and put it first on PATH.\n',
  );
  process.exit(1);
}
