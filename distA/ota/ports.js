// What the OTA job runner needs from the rest of the agent, as small interfaces. The composition root wires
// the real store and runtime in; tests pass their own.
export {};
//# sourceMappingURL=ports.js.map