// The typed mirror of engine/native: exactly what the addon exports, nothing more. Public classes wrap these
// handles; nothing outside engine/src should touch them.
export {};
//# sourceMappingURL=native.js.map