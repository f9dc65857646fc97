import{modelsMigration}from"./chunk-ICZIX5PU.js";var runtimeDesiredMigration={version:20,name:"runtime: desired-state layers",up:`
    CREATE TABLE runtime_desired (
      layer TEXT NOT NULL CHECK (layer IN ('config', 'planner', 'operator', 'ota')),
      subject TEXT NOT NULL,
      doc TEXT NOT NULL,
      author TEXT NOT NULL,
      updated_at INTEGER NOT NULL,
      PRIMARY KEY (layer, subject)
    ) STRICT;
    CREATE TABLE runtime_revision (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      revision INTEGER NOT NULL,
      updated_at INTEGER NOT NULL
    ) STRICT;
    INSERT INTO runtime_revision (id, revision, updated_at) VALUES (1, 0, 0);
  `};var runtimeProbesMigration={version:21,name:"runtime: measured probe results",up:`
    CREATE TABLE runtime_probes (
      model_id TEXT NOT NULL,
      version TEXT NOT NULL,
      variant_id TEXT NOT NULL,
      config TEXT NOT NULL,
      engine_version TEXT NOT NULL,
      board_id TEXT NOT NULL,
      ok INTEGER NOT NULL,
      load_ms REAL NOT NULL,
      prefill_tok_s REAL NOT NULL,
      decode_tok_s REAL NOT NULL,
      peak_rss_bytes INTEGER NOT NULL,
      measured_at INTEGER NOT NULL,
      error TEXT,
      PRIMARY KEY (model_id, version, variant_id, config, engine_version, board_id)
    ) STRICT;
  `};var runtimeMigrations=[runtimeDesiredMigration,runtimeProbesMigration];var voiceTurnsMigration={version:50,name:"workloads: voice turns",up:`
    CREATE TABLE voice_turns (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      session_id TEXT NOT NULL,
      turn INTEGER NOT NULL,
      started_at INTEGER NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('completed', 'cancelled', 'failed')),
      transcript TEXT,
      reply TEXT,
      speech_ms REAL NOT NULL,
      asr_ms REAL,
      ttft_ms REAL,
      ttfa_ms REAL,
      asr_rtf REAL,
      tts_rtf REAL,
      tokens_per_sec REAL,
      prompt_tokens INTEGER,
      generated_tokens INTEGER,
      barge_in_ms REAL,
      error TEXT
    ) STRICT;
    CREATE INDEX voice_turns_time ON voice_turns (started_at);
  `};var coreMigration={version:1,name:"core: key-value state",up:`
    CREATE TABLE kv (
      key TEXT PRIMARY KEY,
      value TEXT NOT NULL,
      updated_at INTEGER NOT NULL
    ) STRICT;
  `};var httpSessionsMigration={version:2,name:"http: login sessions",up:`
    CREATE TABLE http_sessions (
      id_hash TEXT PRIMARY KEY,
      created_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL,
      client TEXT NOT NULL
    ) STRICT;
    CREATE INDEX http_sessions_expiry ON http_sessions (expires_at);
  `};var telemetryOutboxMigration={version:30,name:"telemetry: outbox and counters",up:`
    CREATE TABLE telemetry_outbox (
      seq INTEGER PRIMARY KEY,
      topic TEXT NOT NULL,
      payload BLOB NOT NULL,
      created_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX telemetry_outbox_expires ON telemetry_outbox (expires_at);
    CREATE TABLE telemetry_counters (
      name TEXT PRIMARY KEY,
      value INTEGER NOT NULL
    ) STRICT;
  `};var telemetryHistoryMigration={version:31,name:"telemetry: downsampled history",up:`
    CREATE TABLE telemetry_history (
      metric TEXT NOT NULL,
      bucket_start INTEGER NOT NULL,
      count INTEGER NOT NULL,
      min REAL NOT NULL,
      max REAL NOT NULL,
      sum REAL NOT NULL,
      PRIMARY KEY (metric, bucket_start)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX telemetry_history_time ON telemetry_history (bucket_start);
  `};var otaTrustMigration={version:40,name:"ota: last trusted targets",up:`
    CREATE TABLE ota_trust (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      version INTEGER NOT NULL,
      digest TEXT NOT NULL,
      expires_ms INTEGER NOT NULL,
      document TEXT NOT NULL,
      accepted_at INTEGER NOT NULL
    ) STRICT;
  `};var otaJobsMigration={version:41,name:"ota: job journal and health figures",up:`
    CREATE TABLE ota_jobs (
      job_id TEXT PRIMARY KEY,
      seq INTEGER NOT NULL,
      state TEXT NOT NULL,
      reason TEXT,
      message TEXT,
      package_id TEXT NOT NULL,
      package_version TEXT NOT NULL,
      artifact TEXT,
      url TEXT,
      bytes_done INTEGER NOT NULL DEFAULT 0,
      bytes_total INTEGER,
      previous_version TEXT,
      attempts INTEGER NOT NULL DEFAULT 0,
      measurements TEXT,
      job TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX ota_jobs_state ON ota_jobs (state, seq);
    CREATE TABLE ota_health (
      model_id TEXT NOT NULL,
      version TEXT NOT NULL,
      ttft_ms REAL NOT NULL,
      decode_tps REAL NOT NULL,
      measured_at INTEGER NOT NULL,
      PRIMARY KEY (model_id, version)
    ) STRICT;
  `};var otaRolloutsMigration={version:42,name:"ota: staged rollouts",up:`
    CREATE TABLE ota_rollouts (
      rollout_id TEXT PRIMARY KEY,
      spec TEXT NOT NULL,
      state TEXT NOT NULL,
      phase INTEGER NOT NULL,
      message TEXT,
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL
    ) STRICT;
    CREATE TABLE ota_rollout_devices (
      rollout_id TEXT NOT NULL REFERENCES ota_rollouts (rollout_id),
      device_id TEXT NOT NULL,
      ordinal INTEGER NOT NULL,
      phase INTEGER,
      job_id TEXT,
      state TEXT NOT NULL,
      reason TEXT,
      updated_at INTEGER NOT NULL,
      PRIMARY KEY (rollout_id, device_id)
    ) STRICT;
  `};var otaRootMigration={version:43,name:"ota: trusted root document",up:`
    CREATE TABLE ota_root (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      version INTEGER NOT NULL,
      digest TEXT NOT NULL,
      expires_ms INTEGER NOT NULL,
      document TEXT NOT NULL,
      accepted_at INTEGER NOT NULL
    ) STRICT;
  `};var allMigrations=[coreMigration,httpSessionsMigration,modelsMigration,...runtimeMigrations,telemetryOutboxMigration,telemetryHistoryMigration,otaTrustMigration,otaJobsMigration,otaRolloutsMigration,otaRootMigration,voiceTurnsMigration];import{existsSync,mkdirSync}from"node:fs";import{createRequire}from"node:module";import{dirname,join}from"node:path";var requireCjs=createRequire(import.meta.url);var Database=requireCjs("better-sqlite3");function builtAddon(){const path=join(dirname(requireCjs.resolve("better-sqlite3/package.json")),"build","Release","better_sqlite3.node");return existsSync(path)?path:void 0}function openDatabase(path,migrations,options={}){if(path!==":memory:")mkdirSync(dirname(path),{recursive:true});const nativeBinding=builtAddon();const db=new Database(path,{readonly:options.readonly??false,...nativeBinding?{nativeBinding}:{}});if(!options.readonly){db.pragma("journal_mode = WAL");db.pragma(`synchronous = ${options.synchronous??"FULL"}`)}db.pragma("foreign_keys = ON");db.pragma("busy_timeout = 5000");if(!options.readonly)migrate(db,migrations);return db}function migrate(db,migrations){db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`);const seen=new Set;for(const m of migrations){if(seen.has(m.version))throw new Error(`Duplicate migration version ${m.version} (${m.name})`);seen.add(m.version)}const applied=new Set(db.prepare("SELECT version FROM schema_migrations").all().map(r=>r.version));const done=[];const sorted=[...migrations].sort((a,b)=>a.version-b.version);for(const m of sorted){if(applied.has(m.version))continue;db.transaction(()=>{db.exec(m.up);db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)").run(m.version,m.name,Date.now())})();done.push(m.version)}return done}var KvStore=class{#get;#set;constructor(db){this.#get=db.prepare("SELECT value FROM kv WHERE key = ?");this.#set=db.prepare("INSERT INTO kv (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at")}get(key){const row=this.#get.get(key);return row?JSON.parse(row.value):void 0}set(key,value){this.#set.run(key,JSON.stringify(value),Date.now())}};function openStore(path,options={}){return openDatabase(path,options.migrations??allMigrations,options)}export{KvStore,openStore};
