// tiny-llm at precision "low" against MNN's own llm_demo of the same build, in a process of its own (see agreement.ts).
import { agreementTests } from './agreement.js';

agreementTests('tiny-llm', 'low');
