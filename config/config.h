/* config.h: the plugin configuration, parsed and validated from JSON.
 *
 * Shape (every key optional; defaults below):
 * {
 *   "enabled": true, "strictMode": false,
 *   "scoring": {"halfLife":5, "recencyWindow":3, "recencyBonus":20,
 *               "referenceWeight":15, "frequencyScale":10, "anchorBonus":100},
 *   "pruning": {"pruneThreshold":8, "strictModePreserveThreshold":25,
 *               "maxItemsPerCategory":20, "targetContextItems":30,
 *               "maxContextItems":50, "minMentionsPreserve":3,
 *               "tierMultipliers": {"essential":2.0,"high":1.5,"normal":1.0,"low":0.8}},
 *   "extraction": {"tools": [...], "minWordLength":5, "maxKeywordsPerMessage":8,
 *                  "projects":true, "toolNames":true, "memoryFiles":true,
 *                  "sourceFiles":true, "keywords":true,
 *                  "customPatterns": [{"name":"ticket","pattern":"JIRA-\\d+"}],
 *                  "exclude": ["^keyword:foo"]},
 *   "context": {"maxChars":1500, "maxItems":10, "minScore":1,
 *               "highScore":40, "midScore":15},
 *   "storage": {"backend":"auto"|"sqlite"|"host"|"memory", "path":"clarity.db",
 *               "maxResidentSessions":256},
 *   "limits": {"maxTrackedItems":5000, "maxPromptBytes":67108864, "historyLength":16},
 *   "prediction": {"enabled":true, "weight":30, "maxTargets":3, "minScore":0.25,
 *                  "maxFiles":20, "autoRefresh":false}
 * }
 * Unknown keys, wrong types, out-of-range values and regexes that do not
 * compile are refused with a message naming the key ("scoring.halfLife: must
 * be a number > 0, got -1").
 */
#ifndef CONFIG_CONFIG_H
#define CONFIG_CONFIG_H

#include <stddef.h>

#define CFG_MAX_TOOLS 128
#define CFG_MAX_PATTERNS 64

enum cfg_backend { CFG_STORE_AUTO = 0, CFG_STORE_SQLITE, CFG_STORE_HOST, CFG_STORE_MEMORY };

typedef struct cfg_pattern {
    char *name;    /* owned; becomes the id prefix "<name>:" */
    char *pattern; /* owned; PCRE2 source, compiled by extract/ */
} cfg_pattern;

typedef struct clarity_config {
    int enabled;
    int strict_mode;
    struct {
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
        int auto_refresh; /* refresh a stale graph incrementally in the hook */
    } prediction;
} clarity_config;

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

#endif
