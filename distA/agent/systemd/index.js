export { createLoopHeartbeat } from './loop-heartbeat.js';
export { createSystemdNotifier, timerScheduler, } from './notifier.js';
export { notifyAssignment, parseNotifyEnvironment } from './notify-env.js';
export { createSystemdNotifyTransport, } from './notify-transport.js';
//# sourceMappingURL=index.js.map