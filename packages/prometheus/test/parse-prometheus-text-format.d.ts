// The package ships no types; this is the part of its output the tests read.
declare module 'parse-prometheus-text-format' {
  interface ParsedFamily {
    name: string;
    help: string;
    type: 'COUNTER' | 'GAUGE' | 'UNTYPED' | 'HISTOGRAM' | 'SUMMARY';
    metrics: Array<{ value: string; labels?: Record<string, string> }>;
  }
  export default function parsePrometheusTextFormat(text: string): ParsedFamily[];
}
