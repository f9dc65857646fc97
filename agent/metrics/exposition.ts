// The Prometheus text exposition format (version 0.0.4), which Prometheus, Grafana Agent / Alloy,
// VictoriaMetrics, Telegraf and Home Assistant's Prometheus integration all scrape. One family per name with its
// HELP and TYPE lines; label values escaped (backslash, double quote, newline); histograms as cumulative
// `_bucket{le=…}` series ending in `+Inf`, with `_sum` and `_count`.

export type MetricType = 'counter' | 'gauge' | 'histogram';
export type Labels = Record<string, string>;

export interface HistogramValue {
  buckets: ReadonlyArray<readonly [number, number]>;
  sum: number;
  count: number;
}

export interface MetricFamily {
  name: string;
  help: string;
  type: MetricType;
  samples: Array<{ labels?: Labels; value: number } | { labels?: Labels; histogram: HistogramValue }>;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function escapeHelp(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function labelText(labels: Labels | undefined, extra?: [string, string]): string {
  const entries = Object.entries(labels ?? {});
  if (extra) entries.push(extra);
  if (entries.length === 0) return '';
  for (const [k] of entries)
    if (!LABEL.test(k)) throw new Error(`invalid metric label name ${JSON.stringify(k)}`);
  return `{${entries.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}`;
}

function num(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Number.POSITIVE_INFINITY) return '+Inf';
  if (v === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(v);
}

export function renderExposition(families: readonly MetricFamily[]): string {
  const out: string[] = [];
  for (const f of families) {
    if (!NAME.test(f.name)) throw new Error(`invalid metric name ${JSON.stringify(f.name)}`);
    if (f.samples.length === 0) continue;
    out.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`);
    for (const s of f.samples) {
      if ('histogram' in s) {
        for (const [le, c] of s.histogram.buckets)
          out.push(`${f.name}_bucket${labelText(s.labels, ['le', num(le)])} ${c}`);
        out.push(`${f.name}_bucket${labelText(s.labels, ['le', '+Inf'])} ${s.histogram.count}`);
        out.push(`${f.name}_sum${labelText(s.labels)} ${num(s.histogram.sum)}`);
        out.push(`${f.name}_count${labelText(s.labels)} ${s.histogram.count}`);
      } else {
        out.push(`${f.name}${labelText(s.labels)} ${num(s.value)}`);
      }
    }
  }
  return `${out.join('\n')}\n`;
}
