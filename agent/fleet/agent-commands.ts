import type { Clock } from '../../lib/clock.js';
import { errorMessage } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { type DeviceTopics, fleetTopics } from '../../lib/topics.js';
import type { AgentConnection } from './agent-connection.js';
import { AnswerSender } from './answer-sender.js';
import { CommandServer } from './command-server.js';
import type { CommandRegistry } from './commands.js';
import type { BoardInfo } from './protocol.js';
import type { MessageHandler, SubscriptionRegistry } from './subscriptions.js';

// The fleet agent's command dispatch: requests on this device's and the fleet's command topics go to the
// CommandServer (selector, validation, timeouts), and its answer goes back on the requester's response topic,
// with the MQTT 5 correlation data when the connection has it, and again on the next connection if the broker
// lost it with the last one while the requester still waits (AnswerSender).

export interface CommandDispatchOptions {
  commands: CommandRegistry;
  subscriptions: SubscriptionRegistry;
  connection: AgentConnection;
  topics: DeviceTopics;
  self: { deviceId: string; tags: readonly string[]; board: () => BoardInfo | undefined };
  maxPayloadBytes: number;
  clock: Clock;
  logger: Logger;
  /** Aborted when the agent stops: commands still running are cancelled. */
  signal: AbortSignal;
  /** Registers a listener for every (re)connection: answers lost with the last connection go out again. */
  onConnected: (listener: () => void) => void;
}

export function dispatchCommands(o: CommandDispatchOptions): void {
  const { self, connection, logger } = o;
  const server = new CommandServer({
    registry: o.commands,
    self: {
      deviceId: self.deviceId,
      tags: self.tags,
      get boardFamily() {
        return self.board()?.family;
      },
    },
    maxPayloadBytes: o.maxPayloadBytes,
    clock: o.clock,
    logger: logger.child('cmd'),
    signal: o.signal,
  });
  const answers = new AnswerSender(connection, o.clock, logger.child('cmd'));
  o.onConnected(() => answers.resend());
  const onCommand: MessageHandler = (topic, payload, packet) => {
    const props = packet.properties ?? {};
    server
      .handle({
        topic,
        payload,
        ...(props.responseTopic !== undefined ? { responseTopic: props.responseTopic } : {}),
        ...(props.correlationData !== undefined ? { correlationData: props.correlationData } : {}),
      })
      .then((out) => {
        if (out !== undefined) answers.send(out);
      })
      .catch((err: unknown) => logger.error('command handling crashed', { topic, error: errorMessage(err) }));
  };
  // The device's own commands wait in its broker session while it is away (QoS 1); fleet commands are sent
  // to many with a deadline and an operator who names the devices that did not answer (QoS 0: no JetStream
  // consumer per device on NATS). docs/PROTOCOL.md, "Subscriptions".
  o.subscriptions.add([o.topics.commandFilter], onCommand, 1);
  o.subscriptions.add([fleetTopics.commandFilter], onCommand, 0);
}
