// A V8 profile's self time (a .cpuprofile) or bytes (a .heapprofile) summed by package and by
// function: bench/profile.mjs and `npm run bench:streams -- --profile` print it.

/** `{ total, packages, functions }`: Maps of name to self time (µs) or bytes, and their sum. */
export function summarizeProfile(profile, { allocations = false } = {}) {
  const byId = new Map();
  const self = new Map();
  if (allocations) {
    // A tree from `head`; each sample is one allocation (its size) at a node.
    const visit = (node) => {
      byId.set(node.id, node);
      for (const child of node.children) visit(child);
    };
    visit(profile.head);
    for (const sample of profile.samples) self.set(sample.nodeId, (self.get(sample.nodeId) ?? 0) + sample.size);
  } else {
    for (const node of profile.nodes) byId.set(node.id, node);
    const deltas = profile.timeDeltas;
    for (let i = 0; i < profile.samples.length; i++) self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + (deltas[i] ?? 0));
  }
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const packages = new Map();
  const functions = new Map();
  for (const [id, time] of self) {
    const frame = byId.get(id).callFrame;
    const pkg = frame.url ? packageOf(frame.url) : `(${frame.functionName || 'program'})`;
    packages.set(pkg, (packages.get(pkg) ?? 0) + time);
    const name = `${frame.functionName || '(anonymous)'} ${frame.url ? `${packageOf(frame.url)}:${frame.lineNumber + 1}` : ''}`;
    functions.set(name, (functions.get(name) ?? 0) + time);
  }
  return { total, packages, functions };
}

/** The `limit` largest entries of a summary's map, as `[name, percent of total]`. */
export function topShares(map, total, limit) {
  return [...map]
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(([name, value]) => [name, (100 * value) / total]);
}

function packageOf(url) {
  const modules = url.lastIndexOf('node_modules/');
  if (modules !== -1) {
    const rest = url.slice(modules + 13).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0];
  if (url.includes('/dist/'))
    return (
      'gateway:' +
      url
        .slice(url.indexOf('/dist/') + 6)
        .split('/')
        .slice(0, 2)
        .join('/')
    );
  return url;
}
