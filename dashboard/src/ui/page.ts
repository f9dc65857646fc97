import type { Api } from './api.js';

// Every page is a function from the shared context to a mounted view; `dispose` stops its sockets, timers and
// media when the user navigates away, so nothing keeps running behind another page.

export interface PageContext {
  api: Api;
  /** Re-render the navigation (e.g. after logout). */
  navigate(route: string): void;
}

export interface PageView {
  element: HTMLElement;
  dispose?(): void;
}

export type Page = (ctx: PageContext) => PageView | Promise<PageView>;
