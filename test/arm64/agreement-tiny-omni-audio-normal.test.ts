// tiny-omni-audio at precision "normal" against MNN's own llm_demo of the same build, in a process of its own (see agreement.ts).
import { agreementTests } from './agreement.js';

agreementTests('tiny-omni-audio', 'normal');
