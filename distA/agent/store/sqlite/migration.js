export {};
//# sourceMappingURL=migration.js.map