/* config.h: the plugin configuration, parsed and validated from JSON.
 *
 * Every setting is one entry of the table in config.c (dotted key, type,
 * default, bounds); the README's Config section shows them all.  Unknown
 * keys, wrong types, out-of-range values and regexes that do not compile
 * are refused with a message naming the key ("scoring.halfLife: must be
 * > 0, got -1").
 */
#ifndef CONFIG_CONFIG_H
#define CONFIG_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#define CFG_MAX_TOOLS 128
#define CFG_MAX_PATTERNS 64

enum cfg_backend { CFG_STORE_AUTO = 0, CFG_STORE_SQLITE, CFG_STORE_HOST, CFG_STORE_MEMORY, CFG_STORE_REDIS };
enum cfg_sync { CFG_SYNC_NORMAL = 0, CFG_SYNC_FULL };
/* What recency and staleness count from.  "use": a file's last use (a
 * mention, or a reference: a tool call on it or the agent naming it,
 * whichever is newer), other items' last mention; with the default weights
 * recencyBonus 80 and frequencyScale 3 (measured on the dev corpora: see
 * README, Evaluating relevance).  "original": every item's last mention,
 * and the original plugin's default weights (20 and 10). */
enum cfg_scoring_model { CFG_SCORING_USE = 0, CFG_SCORING_ORIGINAL };

typedef struct cfg_pattern {
    char *name;    /* owned; becomes the id prefix "<name>:" */
    char *pattern; /* owned; PCRE2 source, compiled by extract/ */
} cfg_pattern;

#define CFG_SNAPSHOT_EVERY_MAX 4096 /* storage.snapshotEvery's bound (also a stored meta's "every") */

typedef struct clarity_config {
    int enabled;
    int strict_mode;
    struct {
        int model; /* enum cfg_scoring_model */
        double half_life, recency_window, recency_bonus, reference_weight, frequency_scale,
            anchor_bonus;
    } scoring;
    struct {
        double prune_threshold, strict_preserve_threshold;
        int max_items_per_category, target_context_items, max_context_items,
            min_mentions_preserve;
        double tier_mult[4]; /* indexed by enum item_tier */
    } pruning;
    struct {
        char *tools[CFG_MAX_TOOLS]; /* owned strings */
        size_t n_tools;
        int min_word_length, max_keywords_per_message;
        int projects, tool_names, memory_files, source_files, keywords;
        cfg_pattern custom[CFG_MAX_PATTERNS];
        size_t n_custom;
        char *exclude[CFG_MAX_PATTERNS]; /* owned PCRE2 sources, matched against ids */
        size_t n_exclude;
    } extraction;
    struct {
        int max_chars, max_items;
        double min_score, high_score, mid_score;
    } context;
    struct {
        int backend;
        char *path; /* owned; NULL = $CLARITY_STATE, else $XDG_STATE_HOME/clarity/clarity.db,
                     * else ~/.local/state/clarity/clarity.db */
        int max_resident_sessions;
        char *url;        /* owned; backend redis: redis://[user:password@]host[:port][/db] or unix:///path[?db=N] */
        char *key_prefix; /* owned; NULL = "clarity:" */
        int timeout_ms;   /* bound on one Redis round trip, and on connecting */
        int snapshot_every; /* turn-log records between snapshots (persist.c), 1..CFG_SNAPSHOT_EVERY_MAX */
        int fold_chunk;     /* rows per transaction of the worker's fold (persist.c) */
        int synchronous;    /* enum cfg_sync: SQLite's synchronous, "normal" or "full" */
        int exclusive;      /* SQLite: the file is this process's alone (STORE_SQLITE_EXCLUSIVE) */
    } storage;
    struct {
        int max_tracked_items;
        size_t max_prompt_bytes;
        int history_length;
    } limits;
    /* File predictions from the workspace's code graph (graph/), blended
     * into file items at before_agent_start. */
    struct {
        int enabled;      /* off: the hooks never look for a graph */
        double weight;    /* prediction term = normalized prediction * weight */
        int max_targets;  /* untracked predicted files listed in the block */
        double min_score; /* normalized prediction (best file = 1) kept */
        int max_files;    /* predicted files kept per prompt */
        int auto_refresh; /* refresh a stale graph incrementally (on the loader thread) */
        int load_wait_ms; /* how long a prompt waits for a graph to load; -1: until it has */
    } prediction;
    /* What the model sees (engine/assemble.c, CLARITY_EV_ASSEMBLE). */
    struct {
        int enabled;
        int protect_recent_turns;  /* the last turns are never touched... */
        double protect_share;      /* ...as far as they fit in this share of the budget (the newest always) */
        double high_water, low_water; /* stub in batches: from above high down to low */
        int stub_min_tokens;       /* a smaller message is not worth a stub */
        int args_min_tokens;       /* tool-call arguments longer than this are candidates */
        int64_t max_tokens;        /* a budget of the user's (0: the host's alone) */
        char *keep[CFG_MAX_PATTERNS]; /* owned PCRE2 sources: a message matching one is kept */
        size_t n_keep;
    } assemble;
    /* Oversized tool outputs a host lets clarity trim (Claude Code's
     * PostToolUse): head and tail lines, and every line naming a tracked
     * item scoring above the prune threshold. */
    struct {
        int max_chars;
        int head_lines, tail_lines;
    } tool_output;
    /* Test runs recognised in tool outputs (engine/progress.c). */
    struct {
        int enabled;
        double ema_alpha; /* weight of the newest pass fraction in the moving average */
        int streak_runs;  /* "no improvement in N runs" from this many */
        int history_runs; /* runs kept per session */
        int block_names;  /* failing names the block line shows */
    } progress;
    /* Code intelligence in the block (engine/intel.c). */
    struct {
        int cochange_hints; /* after an edit: the files that change with it, not yet touched */
        int max_hints;
    } codeintel;
} clarity_config;

/* ---- the table of settings (config.c) ---- */

enum cfg_type {
    CT_BOOL,    /* int 0/1 */
    CT_INT,     /* int within [lo, hi] */
    CT_SIZE,    /* size_t within [lo, hi] */
    CT_I64,     /* int64_t within [lo, hi] */
    CT_NUM,     /* double within [lo, hi] */
    CT_NUM_INT, /* double holding a whole number within [lo, hi] */
    CT_ENUM,    /* int: the index of one of names[] */
    CT_PATH,    /* char * (owned) of lo..hi bytes, or NULL (JSON null) */
    CT_LIST     /* a list with its own parse/print/reset (list) */
};

enum cfg_flags {
    CF_LO_EXCL = 1, /* the value must be > lo rather than >= lo */
    CF_HI_OPEN = 2  /* hi is only the storage bound: say "<= hi", not "between" */
};

struct cfg_list_ops;
typedef struct cfg_entry {
    const char *key;   /* dotted: "pruning.tierMultipliers.low" */
    int type;          /* enum cfg_type */
    size_t off;        /* offsetof(clarity_config, member) */
    double def;        /* default (CT_ENUM: index into names) */
    double lo, hi;     /* bounds (CT_PATH: length in bytes) */
    int flags;         /* enum cfg_flags */
    const char *const *names;        /* CT_ENUM: the choices, NULL-terminated */
    const struct cfg_list_ops *list; /* CT_LIST: how to parse, print, reset */
} cfg_entry;

/* The table, in print order (static; *n gets its length). */
const cfg_entry *config_table(size_t *n);

/* toolOutput.maxChars: its default and its range (config.c's table and
 * clarity.trimOutput's maxChars).  The Claude Code adapter reads them too:
 * a Bash output no longer than the limit is not trimmed, so its hook
 * process loads no plugin. */
#define CFG_TOOL_OUTPUT_MAX_CHARS 20000
#define CFG_TOOL_OUTPUT_MAX_CHARS_MIN 1000
#define CFG_TOOL_OUTPUT_MAX_CHARS_MAX 100000000

/* Fills cfg with the defaults.  Returns 0, or -1 on allocation failure. */
int config_defaults(clarity_config *cfg);

/* Parses json (NULL or "" = defaults) over the defaults.  On error returns
 * CLARITY_ECONFIG (or CLARITY_ENOMEM), leaves cfg freed, and sets *err to a
 * malloc()ed message naming the key; caller frees it. */
int config_parse(clarity_config *cfg, const char *json, char **err);

/* Releases what cfg owns. */
void config_free(clarity_config *cfg);

/* The effective config as a JSON object (malloc()ed, caller frees), or NULL. */
char *config_to_json(const clarity_config *cfg);
/* The same object holding only the settings under section ("storage":
 * {"storage": {...}}); section NULL or "" is the whole config
 * (clarity.config's section param). */
char *config_section_json(const clarity_config *cfg, const char *section);
/* Whether some setting's key lies under section (its first segments). */
int config_has_section(const char *section);

#endif
