// The Prometheus text format that `/v1/metrics` answers (version 0.0.4), read into samples, and
// the sums of them a view shows.

// `name{label="value",…} value [timestamp]`: the label set is everything up to the line's last
// `}`, since a value and a timestamp never hold one; a label value is a quoted string in which
// `\\`, `\"` and `\n` are escapes.
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)/y;
const SPECIAL = new Map([["+Inf", Infinity], ["Inf", Infinity], ["-Inf", -Infinity], ["NaN", NaN]]);

// Any other escape is kept as written, as prometheus-client's parser keeps it.
const unescape = (value) => value.replace(/\\(.)/g, (escape, c) => (c === "n" ? "\n" : c === "\\" || c === '"' ? c : escape));

function labelSet(text) {
  const labels = {};
  const body = text.trim();
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < body.length) {
    const label = LABEL.exec(body);
    if (!label) return null;
    labels[label[1]] = unescape(label[2]);
  }
  return labels;
}

function sample(line) {
  const match = SAMPLE.exec(line);
  if (!match) return null;
  const labels = match[2] === undefined ? {} : labelSet(match[2]);
  const value = SPECIAL.has(match[3]) ? SPECIAL.get(match[3]) : Number(match[3]);
  if (!labels || (Number.isNaN(value) && match[3] !== "NaN")) return null;
  return { name: match[1], labels, value };
}

// Every sample as `{ name, labels, value }`, in the text's order; `#` lines (HELP, TYPE), blank
// lines and lines that do not read as a sample are passed over.
export function parseMetrics(text) {
  return text.split("\n").map((line) => line.trim()).filter((line) => line && !line.startsWith("#")).map(sample).filter(Boolean);
}

// The sum of a series' samples for each value of `label` (over its other labels), in the order the
// values first appear; without `label`, one sum under "". Empty when the series is not written out.
export function sumBy(samples, name, label) {
  const sums = new Map();
  for (const s of samples) {
    if (s.name !== name) continue;
    const key = label === undefined ? "" : s.labels[label] ?? "";
    sums.set(key, (sums.get(key) || 0) + s.value);
  }
  return sums;
}

// A series' value summed over its labels; null when it is not written out.
export function total(samples, name) {
  const sums = sumBy(samples, name);
  return sums.has("") ? sums.get("") : null;
}

// A histogram's observations and their mean for each value of `label`, from its `_count` and
// `_sum` series: `[{ key, count, mean }]`, mean null before the first.
export function means(samples, histogram, label) {
  const sums = sumBy(samples, `${histogram}_sum`, label);
  return [...sumBy(samples, `${histogram}_count`, label)].map(([key, count]) => ({ key, count, mean: count ? sums.get(key) / count : null }));
}
