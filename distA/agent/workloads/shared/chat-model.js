export {};
//# sourceMappingURL=chat-model.js.map