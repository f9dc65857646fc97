// Every failure an HTTP client sees has one JSON shape: { "error": { "code", "message" } }. Handlers throw
// HttpError; the server turns it into the response, so no handler formats errors by hand.
export class HttpError extends Error {
    status;
    code;
    headers;
    constructor(status, code, message, headers = {}) {
        super(message);
        this.name = 'HttpError';
        this.status = status;
        this.code = code;
        this.headers = headers;
    }
}
export function errorBody(code, message) {
    return { error: { code, message } };
}
//# sourceMappingURL=http-error.js.map