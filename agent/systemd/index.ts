export { createLoopHeartbeat, type LoopHeartbeat } from './loop-heartbeat.js';
export {
  createSystemdNotifier,
  type Scheduler,
  START_EXTENSION,
  type StartExtension,
  type SystemdNotifier,
  type SystemdNotifierOptions,
  timerScheduler,
} from './notifier.js';
export { type NotifyEnvironment, notifyAssignment, parseNotifyEnvironment } from './notify-env.js';
export {
  createSystemdNotifyTransport,
  type NotifyTransport,
  type SystemdNotifyTransportOptions,
} from './notify-transport.js';
