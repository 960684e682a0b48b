// Whether `npm run bench` goes on to the long-stream scenarios (long-streams.mjs) after its
// table, and with which options. A full run does; a short one (`--quick`, a chosen
// `--scenarios`) does not unless `--long` asks; `--no-long` never. test/bench-long-run.spec.ts

/** Options of run.mjs that long-streams.mjs takes as they are: the same database, the same
 * pinning, the same embedded database folder when one was chosen. */
const FORWARDED = ['database-url', 'data-dir', 'pin'];

/**
 * The arguments for long-streams.mjs, or null when the run leaves the long streams out.
 * `opt` is run.mjs's parsed options (`long` undefined unless given); `out` its results folder,
 * under which the long streams write theirs.
 */
export function longStreamsArgs(opt, out) {
  const wanted = opt.long ?? !(opt.quick || opt.scenarios !== undefined);
  if (!wanted) return null;
  const args = ['--out', `${out}/long-streams`];
  for (const name of FORWARDED) {
    if (opt[name] !== undefined) args.push(`--${name}`, String(opt[name]));
  }
  return args;
}
