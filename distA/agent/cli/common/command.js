export {};
//# sourceMappingURL=command.js.map