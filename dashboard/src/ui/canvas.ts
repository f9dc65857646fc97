// What every canvas chart on the dashboard does around its drawing: size the backing store to the element at the
// screen's pixel ratio (sharp lines on high-density screens), and redraw at most once per animation frame however
// often data arrives.

export interface PreparedCanvas {
  ctx: CanvasRenderingContext2D;
  /** The drawing area in CSS pixels. */
  width: number;
  height: number;
}

/** Sizes `canvas` to its CSS box at the device pixel ratio; a cleared context in CSS pixels, or none. */
export function prepareCanvas(canvas: HTMLCanvasElement): PreparedCanvas | undefined {
  const dpr = window.devicePixelRatio || 1;
  const width = canvas.clientWidth || 480;
  const height = canvas.clientHeight || 180;
  if (canvas.width !== Math.round(width * dpr)) canvas.width = Math.round(width * dpr);
  if (canvas.height !== Math.round(height * dpr)) canvas.height = Math.round(height * dpr);
  const ctx = canvas.getContext('2d');
  if (!ctx) return undefined;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, height);
  return { ctx, width, height };
}

/** A function that runs `draw` on the next animation frame, once however many times it is called before then. */
export function frameScheduler(draw: () => void): () => void {
  let pending = false;
  return () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      draw();
    });
  };
}
