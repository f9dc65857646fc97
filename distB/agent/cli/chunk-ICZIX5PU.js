var systemClock={monotonicMs:()=>Number(process.hrtime.bigint()/1000000n),nowMs:()=>Date.now()};function sleep(ms,signal){return new Promise((resolve,reject)=>{if(signal?.aborted)return reject(signal.reason);const timer=setTimeout(()=>{signal?.removeEventListener("abort",onAbort);resolve()},ms);const onAbort=()=>{clearTimeout(timer);reject(signal?.reason)};signal?.addEventListener("abort",onAbort,{once:true})})}var modelsMigration={version:10,name:"models: package inventory and install journal",up:`
    CREATE TABLE model_packages (
      id TEXT NOT NULL,
      version TEXT NOT NULL,
      task TEXT NOT NULL,
      manifest TEXT NOT NULL,
      derived INTEGER NOT NULL,
      size_bytes INTEGER NOT NULL,
      installed_at INTEGER NOT NULL,
      last_used_at INTEGER,
      in_use INTEGER NOT NULL DEFAULT 0,
      kept INTEGER NOT NULL DEFAULT 0,
      rollback_hold INTEGER NOT NULL DEFAULT 0,
      PRIMARY KEY (id, version)
    ) STRICT;
    CREATE TABLE model_journal (
      work_dir TEXT PRIMARY KEY,
      op TEXT NOT NULL CHECK (op IN ('install', 'remove')),
      id TEXT,
      version TEXT,
      started_at INTEGER NOT NULL
    ) STRICT;
  `};export{systemClock,sleep,modelsMigration};
