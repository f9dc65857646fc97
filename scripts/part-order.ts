// The graph algorithms of scripts/check-layers.ts, apart from what it reads and reports: the import cycles between
// files, and an order of the parts with few imports running back up it. Pure functions over names and edges.

/** Strongly connected components (Tarjan), each sorted; singletons only when they import themselves. */
export function cycles(nodes: string[], edges: Map<string, Set<string>>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const connect = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!idx.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || edges.get(v)?.has(v)) out.push(scc.sort());
    }
  };
  for (const n of nodes) if (!idx.has(n)) connect(n);
  return out;
}

/**
 * An order of the parts, lowest first, with few imports running back up (weighted by how many file imports
 * each part-to-part edge carries): greedy (Eades et al.) followed by moving single parts while that helps.
 */
export function orderParts(parts: string[], weight: Map<string, Map<string, number>>): string[] {
  const w = (a: string, b: string) => weight.get(a)?.get(b) ?? 0;
  const rest = new Set(parts);
  const low: string[] = [];
  const high: string[] = [];
  while (rest.size > 0) {
    // A part that imports nothing left goes to the bottom; one nothing left imports goes to the top.
    const sink = [...rest].find((p) => [...rest].every((q) => q === p || w(p, q) === 0));
    if (sink) {
      low.push(sink);
      rest.delete(sink);
      continue;
    }
    const source = [...rest].find((p) => [...rest].every((q) => q === p || w(q, p) === 0));
    if (source) {
      high.unshift(source);
      rest.delete(source);
      continue;
    }
    let best = '';
    let score = Number.NEGATIVE_INFINITY;
    for (const p of rest) {
      let s = 0;
      for (const q of rest) s += w(q, p) - w(p, q);
      if (s > score) [best, score] = [p, s];
    }
    // Imported by more than it imports: lower.
    low.push(best);
    rest.delete(best);
  }
  const order = [...low, ...high];
  // Moving one part from i to j changes only its pairs with the parts it passes: O(n) per move, not a recount.
  for (let improved = true; improved; ) {
    improved = false;
    for (let i = 0; i < order.length; i++) {
      const p = order[i]!;
      let [bestJ, bestDelta, delta] = [i, 0, 0];
      for (let j = i + 1; j < order.length; j++) {
        delta += w(order[j]!, p) - w(p, order[j]!);
        if (delta < bestDelta) [bestJ, bestDelta] = [j, delta];
      }
      delta = 0;
      for (let j = i - 1; j >= 0; j--) {
        delta += w(p, order[j]!) - w(order[j]!, p);
        if (delta < bestDelta) [bestJ, bestDelta] = [j, delta];
      }
      if (bestJ !== i) {
        order.splice(i, 1);
        order.splice(bestJ, 0, p);
        improved = true;
      }
    }
  }
  return order;
}
