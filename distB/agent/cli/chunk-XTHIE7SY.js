import{agentVersion,command}from"./chunk-SPBE24BD.js";export{agentVersion,command};
