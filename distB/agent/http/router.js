const SEGMENT = /^(:[A-Za-z_][A-Za-z0-9_]*|[A-Za-z0-9._~!$&'()+,;=@-]+)$/;
function compile(path) {
    if (!path.startsWith('/'))
        throw new TypeError(`Route path must start with '/', got ${JSON.stringify(path)}`);
    const wildcard = path === '/*' || path.endsWith('/*');
    const body = wildcard ? path.slice(0, -2) : path;
    const segments = body.split('/').filter((s) => s.length > 0);
    for (const s of segments) {
        if (!SEGMENT.test(s))
            throw new TypeError(`Invalid route segment ${JSON.stringify(s)} in ${JSON.stringify(path)}`);
    }
    return { source: path, segments, wildcard };
}
/** Two patterns conflict when they would match the same paths: same shape, parameters in the same places. */
function shapeKey(p) {
    return p.segments.map((s) => (s.startsWith(':') ? ':' : s)).join('/') + (p.wildcard ? '/*' : '');
}
function decode(segment) {
    try {
        return decodeURIComponent(segment);
    }
    catch {
        return undefined;
    }
}
function matchPattern(p, pathSegments) {
    if (p.wildcard ? pathSegments.length < p.segments.length : pathSegments.length !== p.segments.length) {
        return undefined;
    }
    const params = {};
    for (const [i, seg] of p.segments.entries()) {
        const actual = pathSegments[i];
        if (seg.startsWith(':')) {
            const value = decode(actual);
            if (value === undefined)
                return undefined;
            params[seg.slice(1)] = value;
        }
        else if (seg !== actual) {
            return undefined;
        }
    }
    if (p.wildcard)
        params['*'] = pathSegments.slice(p.segments.length).join('/');
    return params;
}
// Literal segments beat parameters, which beat wildcards: `/api/models/active` wins over `/api/models/:id`.
function specificity(p) {
    return [...p.segments.map((s) => (s.startsWith(':') ? 1 : 2)), p.wildcard ? 0 : 3];
}
function compareSpecificity(a, b) {
    const sa = specificity(a);
    const sb = specificity(b);
    for (let i = 0; i < Math.max(sa.length, sb.length); i++) {
        const d = (sb[i] ?? -1) - (sa[i] ?? -1);
        if (d !== 0)
            return d;
    }
    return 0;
}
export function splitPath(pathname) {
    return pathname.split('/').filter((s) => s.length > 0);
}
export class HttpRouter {
    #routes = [];
    #upgrades = [];
    /** Register a handler; returns a function that removes it. Throws if the same method and path shape exist. */
    route(method, path, handler, options = { auth: true }) {
        const pattern = compile(path);
        const key = shapeKey(pattern);
        if (this.#routes.some((r) => r.method === method && shapeKey(r.pattern) === key)) {
            throw new Error(`Route ${method} ${path} is already registered`);
        }
        const entry = { method, pattern, handler, auth: options.auth };
        this.#routes.push(entry);
        this.#routes.sort((a, b) => compareSpecificity(a.pattern, b.pattern));
        return () => {
            const i = this.#routes.indexOf(entry);
            if (i !== -1)
                this.#routes.splice(i, 1);
        };
    }
    /** Register a WebSocket endpoint (served by `ws` in noServer mode on the same port). Returns a remover. */
    upgrade(path, handler, options = { auth: true }) {
        const pattern = compile(path);
        const key = shapeKey(pattern);
        if (this.#upgrades.some((u) => shapeKey(u.pattern) === key)) {
            throw new Error(`WebSocket endpoint ${path} is already registered`);
        }
        const entry = { pattern, handler, auth: options.auth };
        this.#upgrades.push(entry);
        this.#upgrades.sort((a, b) => compareSpecificity(a.pattern, b.pattern));
        return () => {
            const i = this.#upgrades.indexOf(entry);
            if (i !== -1)
                this.#upgrades.splice(i, 1);
        };
    }
    /**
     * Find the handler for a request. `allowed` lists the methods registered for the path when none matches the
     * method (for 405 and its Allow header). HEAD falls back to GET.
     */
    match(method, pathname) {
        const segments = splitPath(pathname);
        const allowed = new Set();
        let pathAuth = true;
        let found;
        let headFallback;
        for (const entry of this.#routes) {
            const params = matchPattern(entry.pattern, segments);
            if (params === undefined)
                continue;
            if (allowed.size === 0)
                pathAuth = entry.auth;
            allowed.add(entry.method);
            if (entry.method === method && found === undefined)
                found = { entry, params };
            if (method === 'HEAD' && entry.method === 'GET' && headFallback === undefined)
                headFallback = { entry, params };
        }
        if (allowed.has('GET'))
            allowed.add('HEAD');
        return { found: found ?? headFallback, allowed: [...allowed], pathAuth };
    }
    matchUpgrade(pathname) {
        const segments = splitPath(pathname);
        for (const entry of this.#upgrades) {
            const params = matchPattern(entry.pattern, segments);
            if (params !== undefined)
                return { entry, params };
        }
        return undefined;
    }
    /** Registered endpoints, for the startup log and the dashboard's API listing. */
    describe() {
        return [
            ...this.#routes.map((r) => ({ method: r.method, path: r.pattern.source, auth: r.auth })),
            ...this.#upgrades.map((u) => ({ method: 'WS', path: u.pattern.source, auth: u.auth })),
        ];
    }
}
//# sourceMappingURL=router.js.map