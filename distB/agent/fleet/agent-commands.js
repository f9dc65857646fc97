import { errorMessage } from '../common/errors.js';
import { CommandServer } from './command-server.js';
import { fleetTopics } from './topics.js';
export function dispatchCommands(o) {
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
    const onCommand = (topic, payload, packet) => {
        const props = packet.properties ?? {};
        server
            .handle({
            topic,
            payload,
            ...(props.responseTopic !== undefined ? { responseTopic: props.responseTopic } : {}),
            ...(props.correlationData !== undefined ? { correlationData: props.correlationData } : {}),
        })
            .then((out) => {
            if (out === undefined)
                return;
            const opts = { qos: 1 };
            if (connection.v5 && out.correlationData)
                opts.properties = { correlationData: out.correlationData };
            connection.publishSafe(out.topic, out.payload, opts);
        })
            .catch((err) => logger.error('command handling crashed', { topic, error: errorMessage(err) }));
    };
    o.subscriptions.add([o.topics.commandFilter, fleetTopics.commandFilter], onCommand);
}
//# sourceMappingURL=agent-commands.js.map