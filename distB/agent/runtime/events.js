export {};
//# sourceMappingURL=events.js.map