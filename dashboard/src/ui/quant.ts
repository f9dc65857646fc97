// A variant's precision as people write it. The API sends the manifest's structured field; an older agent (or
// a derived manifest without a label) may send less, and no form of it may reach the page as "[object Object]".

export interface QuantView {
  weights: string;
  activations: string;
  quantBlock?: number;
  symmetric?: boolean;
  label?: string;
}

export function quantText(q: QuantView | string): string {
  if (typeof q === 'string') return q;
  const base = q.label ?? `weights ${q.weights}, activations ${q.activations}`;
  const block = q.quantBlock !== undefined && q.quantBlock > 0 ? `, block ${q.quantBlock}` : '';
  return `${base}${block}`;
}
