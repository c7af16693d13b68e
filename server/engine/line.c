/* line.c - line normalisation: ANSI/NUL cleanup and log-prefix dialects.
 *
 * A line is cleaned in two passes:
 *   1. ANSI escapes and NUL bytes are removed into a stack buffer (the input
 *      is first capped at DDX_LINE_MAX, so the buffer is bounded);
 *   2. prefixes are peeled off the front in a loop, one per iteration, until
 *      no dialect matches. Every parser looks only at the bytes in front of
 *      the cursor, is bounded, and either consumes a whole prefix (and records
 *      what it says in the meta) or touches nothing, so the loop is O(n).
 *
 * Prefixes come in two layers: outer ones added by whatever collected the
 * log (a log viewer's line numbers, Markdown quoting, pdsh/pod host names,
 * CI timestamps) and inner ones written by the training stack itself (glog,
 * [rankN]:, DeepSpeed's logger, ...). Host-like tokens ("worker-1: ",
 * "[pod-0] ") are only believed in the outer layer: once an inner prefix has
 * been seen, "foo-1: " is message text. This keeps the heuristic host parsers
 * away from message bodies.
 *
 * No allocation, no regex, no locale: character classes are spelled out so
 * that the result does not depend on setlocale(). */
#include "ddx/line.h"

#include <stdio.h>
#include <string.h>

/* Which meta fields this line has already set: the outermost prefix wins
 * (a platform prefix is stamped on every line of the log, an inner one
 * may be missing on some), but anything this line says beats a value the
 * caller preset from context. */
enum {
  LINE_SEEN_RANK = 1u << 0,
  LINE_SEEN_LOCAL = 1u << 1,
  LINE_SEEN_HOST = 1u << 2,
  LINE_SEEN_TS = 1u << 3,
  LINE_SEEN_LEVEL = 1u << 4,
  LINE_SEEN_STREAM = 1u << 5,
};

/* Bounds for the parsers' scans: every real prefix is far shorter, and the
 * bounds keep a pathological line from costing more than O(n) overall. */
#define LINE_TOKEN_MAX 256
#define LINE_RAY_MAX 160
#define LINE_LOGGER_MAX 128

typedef struct line_state {
  ddx_line_meta_t *meta;
  unsigned seen;
  int outer;          /* still in the outer (collector/platform) layer */
  int after_ts;       /* the previous prefix was a bare timestamp */
  int64_t srun_task;  /* the srun --label id of this line, -1 none */
  int64_t inner_rank; /* a rank an inner prefix named after an outer one, -1 none */
} line_state_t;

typedef struct line_time {
  int64_t year, month, day, hour, min, sec, ms;
} line_time_t;

/* ---- character classes (ASCII only, locale independent) ---- */

static int line_is_digit(char c) {
  return c >= '0' && c <= '9';
}

static int line_is_upper(char c) {
  return c >= 'A' && c <= 'Z';
}

static int line_is_lower(char c) {
  return c >= 'a' && c <= 'z';
}

static int line_is_alpha(char c) {
  return line_is_upper(c) || line_is_lower(c);
}

static int line_is_alnum(char c) {
  return line_is_alpha(c) || line_is_digit(c);
}

static int line_is_host_char(char c) {
  return line_is_alnum(c) || c == '-' || c == '.';
}

static char line_lower(char c) {
  return line_is_upper(c) ? (char)(c - 'A' + 'a') : c;
}

/* ---- small scanners ---- */

/* Whether the literal lit starts at s[i]. */
static int line_lit(const char *s, size_t n, size_t i, const char *lit) {
  size_t l = strlen(lit);
  return i <= n && n - i >= l && memcmp(s + i, lit, l) == 0;
}

/* Reads a run of min..max digits at s[*i]; a longer run is not a match
 * (so "20240" is not a 4-digit year). */
static int line_num(const char *s, size_t n, size_t *i, size_t min, size_t max, int64_t *val) {
  size_t j = *i;
  int64_t v = 0;
  while (j < n && line_is_digit(s[j])) {
    if (j - *i >= max) return 0;
    /* saturate: a 20-digit run is still a run, not an overflow */
    v = v > (INT64_MAX - 9) / 10 ? INT64_MAX : v * 10 + (s[j] - '0');
    j++;
  }
  if (j - *i < min) return 0;
  *val = v;
  *i = j;
  return 1;
}

/* Optional ".123456" or ",412" after seconds: milliseconds from the first
 * three digits, the rest (micro/nanoseconds) consumed and ignored. */
static void line_frac(const char *s, size_t n, size_t *i, line_time_t *t) {
  size_t j = *i;
  if (j + 1 >= n || (s[j] != '.' && s[j] != ',') || !line_is_digit(s[j + 1])) return;
  j++;
  int64_t ms = 0;
  size_t k = 0;
  for (; j < n && line_is_digit(s[j]); j++, k++)
    if (k < 3) ms = ms * 10 + (s[j] - '0');
  for (; k < 3; k++)
    ms *= 10;
  t->ms = ms;
  *i = j;
}

/* HH:MM:SS with optional fraction. */
static int line_hms(const char *s, size_t n, size_t *i, line_time_t *t) {
  size_t j = *i;
  int64_t h, m, sec;
  if (!line_num(s, n, &j, 2, 2, &h) || !line_lit(s, n, j, ":")) return 0;
  j++;
  if (!line_num(s, n, &j, 2, 2, &m) || !line_lit(s, n, j, ":")) return 0;
  j++;
  if (!line_num(s, n, &j, 2, 2, &sec)) return 0;
  if (h > 23 || m > 59 || sec > 60) return 0;
  t->hour = h;
  t->min = m;
  t->sec = sec;
  t->ms = 0;
  line_frac(s, n, &j, t);
  *i = j;
  return 1;
}

static int line_valid_md(int64_t month, int64_t day) {
  return month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

/* YYYY-MM-DD, then ' ' or 'T', then HH:MM:SS[.frac], then an optional zone
 * (Z, +HH:MM, +HHMM) that is consumed but ignored. */
static int line_datetime(const char *s, size_t n, size_t *i, line_time_t *t) {
  size_t j = *i;
  int64_t y, mo, d;
  if (!line_num(s, n, &j, 4, 4, &y) || !line_lit(s, n, j, "-")) return 0;
  j++;
  if (!line_num(s, n, &j, 2, 2, &mo) || !line_lit(s, n, j, "-")) return 0;
  j++;
  if (!line_num(s, n, &j, 2, 2, &d) || !line_valid_md(mo, d)) return 0;
  if (j >= n || (s[j] != ' ' && s[j] != 'T')) return 0;
  j++;
  if (!line_hms(s, n, &j, t)) return 0;
  t->year = y;
  t->month = mo;
  t->day = d;
  if (j < n && s[j] == 'Z') {
    j++;
  } else if (j + 4 < n && (s[j] == '+' || s[j] == '-') && line_is_digit(s[j + 1]) &&
             line_is_digit(s[j + 2])) {
    size_t k = j + 3;
    if (k < n && s[k] == ':') k++;
    if (k + 1 < n && line_is_digit(s[k]) && line_is_digit(s[k + 1])) j = k + 2;
  }
  *i = j;
  return 1;
}

/* glog's date: MMDD, or MDD from c10's logger which does not pad the month
 * ("E321" is March 21st). */
static int line_mmdd(const char *s, size_t n, size_t *i, line_time_t *t) {
  size_t j = *i;
  int64_t v;
  if (!line_num(s, n, &j, 3, 4, &v) || !line_valid_md(v / 100, v % 100)) return 0;
  t->year = 0;
  t->month = v / 100;
  t->day = v % 100;
  *i = j;
  return 1;
}

/* Milliseconds on a made-up calendar (every month 31 days, year 0 when the
 * format has none). Not an epoch time: it only has to be monotonic within
 * one log, which is all the callers use it for (ordering lines, measuring
 * gaps), and it avoids timegm() and its locale/timezone baggage. */
static int64_t line_time_ms(const line_time_t *t) {
  return (((((t->year * 12 + t->month) * 31 + t->day) * 24 + t->hour) * 60 + t->min) * 60 +
          t->sec) *
             1000 +
         t->ms;
}

/* A logging level word at s[0]; returns the level letter and its length.
 * Upper case only: "Error" or "info" at a line start is message text. */
static char line_level_word(const char *s, size_t n, size_t *len) {
  static const struct {
    const char *word;
    char level;
  } levels[] = {
      {"INFO", 'I'},  {"WARNING", 'W'},  {"WARN", 'W'},  {"ERROR", 'E'},
      {"DEBUG", 'D'}, {"CRITICAL", 'F'}, {"FATAL", 'F'},
  };
  for (size_t k = 0; k < sizeof levels / sizeof levels[0]; k++) {
    size_t l = strlen(levels[k].word);
    if (n >= l && memcmp(s, levels[k].word, l) == 0 && (n == l || !line_is_alnum(s[l]))) {
      *len = l;
      return levels[k].level;
    }
  }
  return 0;
}

static int line_glog_level(char c) {
  return c == 'I' || c == 'W' || c == 'E' || c == 'F';
}

/* "file.cpp:629]" / "engine.py:1899:forward]" / "axolotl.x:1004]" starting
 * at s[i]: a token without spaces that holds ":<digit>" and ends at ']'.
 * Returns the index just past ']', or 0. */
static size_t line_file_line_end(const char *s, size_t n, size_t i) {
  int has_line = 0;
  size_t start = i;
  for (; i < n && i - start < LINE_TOKEN_MAX; i++) {
    char c = s[i];
    if (c == ']') return (has_line && i > start && s[start] != ':') ? i + 1 : 0;
    if (c == ' ' || c == '[') return 0;
    if (c == ':' && i + 1 < n && line_is_digit(s[i + 1])) has_line = 1;
  }
  return 0;
}

/* Consumes one space after a prefix; the message's own indentation (a
 * traceback's "  File") is left alone. */
static size_t line_one_space(const char *s, size_t n, size_t i) {
  return (i < n && s[i] == ' ') ? i + 1 : i;
}

/* ---- meta setters: first (outermost) fact of the line wins ---- */

static void line_set_rank(line_state_t *st, int64_t v) {
  if (!(st->seen & LINE_SEEN_RANK)) {
    st->meta->rank = (int32_t)v;
    st->seen |= LINE_SEEN_RANK;
  } else if (st->inner_rank < 0) {
    st->inner_rank = v;
  }
}

static void line_set_local_rank(line_state_t *st, int64_t v) {
  if (!(st->seen & LINE_SEEN_LOCAL)) {
    st->meta->local_rank = (int32_t)v;
    st->seen |= LINE_SEEN_LOCAL;
  }
}

static void line_set_host(line_state_t *st, const char *h, size_t len) {
  if (st->seen & LINE_SEEN_HOST) return;
  if (len > DDX_HOST_MAX - 1) len = DDX_HOST_MAX - 1;
  memcpy(st->meta->host, h, len);
  st->meta->host[len] = '\0';
  st->seen |= LINE_SEEN_HOST;
}

static void line_set_ts(line_state_t *st, const line_time_t *t) {
  if (!(st->seen & LINE_SEEN_TS)) {
    st->meta->ts_ms = line_time_ms(t);
    st->seen |= LINE_SEEN_TS;
  }
}

static void line_set_level(line_state_t *st, char level) {
  if (!(st->seen & LINE_SEEN_LEVEL)) {
    st->meta->level = level;
    st->seen |= LINE_SEEN_LEVEL;
  }
}

static void line_set_stream(line_state_t *st, uint8_t stream) {
  if (!(st->seen & LINE_SEEN_STREAM)) {
    st->meta->stream = stream;
    st->seen |= LINE_SEEN_STREAM;
  }
}

/* ---- host heuristics ---- */

static int line_is_ipv4(const char *s, size_t n) {
  size_t i = 0;
  for (int part = 0; part < 4; part++) {
    int64_t v;
    if (part > 0) {
      if (i >= n || s[i] != '.') return 0;
      i++;
    }
    if (!line_num(s, n, &i, 1, 3, &v) || v > 255) return 0;
  }
  return i == n;
}

/* Tool names that print "name: message" and carry a version ("python3: can't
 * open file", "gcc-12: error", "cuda-12.1: ..."): a stem from this list
 * followed only by version characters is not a host. */
static int line_is_tool_version(const char *s, size_t n) {
  static const char *const tools[] = {
      "python",   "pip",  "gcc",    "clang", "nvcc",  "cc",    "ld",   "bash", "sh",
      "zsh",      "ssh",  "git",    "conda", "cuda",  "cudnn", "nccl", "utf",  "torch",
      "torchrun", "srun", "mpirun", "ninja", "cmake", "make",  "java", "perl", "ruby",
  };
  size_t stem = 0;
  while (stem < n && line_is_alpha(s[stem]))
    stem++;
  for (size_t i = stem; i < n; i++)
    if (!line_is_digit(s[i]) && s[i] != '.' && s[i] != '-') return 0;
  for (size_t k = 0; k < sizeof tools / sizeof tools[0]; k++) {
    size_t l = strlen(tools[k]);
    if (l != stem) continue;
    size_t i = 0;
    while (i < l && line_lower(s[i]) == tools[k][i])
      i++;
    if (i == l) return 1;
  }
  return 0;
}

static int line_ends_with(const char *s, size_t n, const char *suffix) {
  size_t l = strlen(suffix);
  return n >= l && memcmp(s + n - l, suffix, l) == 0;
}

/* Whether a token (already known to be [A-Za-z0-9.-]) looks like a host
 * name rather than the start of a message: it must have a letter and a digit
 * or dash (node-3, g2001, dlc1abc-master-0), and must not be a CamelCase
 * identifier, an exception/warning class, hex, or a versioned tool name. */
static int line_is_hostlike(const char *s, size_t n) {
  int has_alpha = 0, has_digit_or_dash = 0, has_lower = 0, identifier = 1;
  if (n == 0 || !line_is_alnum(s[0]) || !line_is_alnum(s[n - 1])) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    has_alpha |= line_is_alpha(c);
    has_lower |= line_is_lower(c);
    has_digit_or_dash |= line_is_digit(c) || c == '-';
    if (!line_is_alnum(c)) identifier = 0;
    if (c == '.' && i + 1 < n && s[i + 1] == '.') return 0;
  }
  if (!has_alpha || !has_digit_or_dash) return 0;
  if (identifier && line_is_upper(s[0]) && has_lower)
    return 0; /* Fp16Matmul, Epoch3: a Python name, not a host */
  if (line_is_upper(s[0]) && n > 1 && line_is_lower(s[1]))
    return 0; /* "Epoch-3", "Step-10": a capitalised word; k8s/DNS names are lower case */
  if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) return 0;
  if (line_ends_with(s, n, "Error") || line_ends_with(s, n, "Exception") ||
      line_ends_with(s, n, "Warning"))
    return 0;
  return !line_is_tool_version(s, n);
}

/* ---- the dialects ---- */

/* "[rank7]: " (PyTorch's excepthook; global rank), also "rank7]: " whose
 * bracket was lost when the paste was cut, and "[rank7]:[E..." without a
 * space before a glog header. */
static size_t line_try_rank(const char *s, size_t n, line_state_t *st) {
  size_t i = (n > 0 && s[0] == '[') ? 1 : 0;
  int64_t r;
  if (!line_lit(s, n, i, "rank")) return 0;
  i += 4;
  if (!line_num(s, n, &i, 1, 7, &r) || !line_lit(s, n, i, "]:")) return 0;
  i = line_one_space(s, n, i + 2);
  line_set_rank(st, r);
  st->meta->dialects |= DDX_DIALECT_RANK;
  st->outer = 0;
  return i;
}

/* glog's stamp from the month at *at: "MMDD hh:mm:ss.frac " with any
 * further spaces, then an optional thread id (space padded) and its spaces;
 * *at ends on what follows. 0, and the line is not glog, otherwise. */
static int line_glog_stamp(const char *s, size_t n, size_t *at, line_time_t *t) {
  size_t i = *at;
  if (!line_mmdd(s, n, &i, t) || !line_lit(s, n, i, " ")) return 0;
  i++;
  if (!line_hms(s, n, &i, t) || !line_lit(s, n, i, " ")) return 0;
  while (i < n && s[i] == ' ')
    i++;
  size_t j = i;
  int64_t tid;
  if (line_num(s, n, &j, 1, 20, &tid) && line_lit(s, n, j, " ")) {
    i = j;
    while (i < n && s[i] == ' ')
      i++;
  }
  *at = i;
  return 1;
}

/* The end of a glog-shaped prefix (glog, its bracketed c10 form, vLLM):
 * the level, the time when the prefix has one (t may be NULL), the GLOG
 * dialect, and one space after the "file:line]" that ends at end. */
static size_t line_glog_done(const char *s, size_t n, size_t end, char level, const line_time_t *t,
                             line_state_t *st) {
  line_set_level(st, level);
  if (t) line_set_ts(st, t);
  st->meta->dialects |= DDX_DIALECT_GLOG;
  st->outer = 0;
  return line_one_space(s, n, end);
}

/* "[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] " (c10 logger), with
 * an optional thread id, and the old "[E ProcessGroupNCCL.cpp:737] " with
 * no time at all. */
static size_t line_try_glog_bracket(const char *s, size_t n, line_state_t *st) {
  line_time_t t = {0};
  int has_time = 0;
  size_t i = 2;
  if (n < 4 || s[0] != '[' || !line_glog_level(s[1])) return 0;
  if (line_is_digit(s[i])) {
    if (!line_glog_stamp(s, n, &i, &t)) return 0;
    has_time = 1;
  } else if (s[i] == ' ') {
    i++;
  } else {
    return 0;
  }
  size_t end = line_file_line_end(s, n, i);
  if (!end) return 0;
  return line_glog_done(s, n, end, s[1], has_time ? &t : NULL, st);
}

/* "E0801 12:34:56.123456 1234 file.cpp:12] " (glog proper, also torch
 * elastic's agent since 2.4). The thread id may be space padded. */
static size_t line_try_glog_bare(const char *s, size_t n, line_state_t *st) {
  line_time_t t = {0};
  size_t i = 1;
  if (n < 16 || !line_glog_level(s[0]) || !line_is_digit(s[1])) return 0;
  if (!line_glog_stamp(s, n, &i, &t)) return 0;
  size_t end = line_file_line_end(s, n, i);
  if (!end) return 0;
  return line_glog_done(s, n, end, s[0], &t, st);
}

/* SGLang's scheduler tags after its timestamp, up to the closing bracket:
 * "[2025-06-23 15:06:59 TP13] ", "[... DP4 TP4] ", "[... PP1 TP3] " (each a
 * word of capitals, '_' allowed, then a number). Returns the bracket's
 * index (0: not such tags). The TP rank is the global rank only when no
 * other parallel dimension is named: *tp gets it then, else -1. */
static size_t line_parallel_tags(const char *s, size_t n, size_t i, int64_t *tp) {
  int64_t v = -1;
  int others = 0, tags = 0;
  *tp = -1;
  while (i < n && s[i] == ' ' && tags < 6) {
    size_t w = ++i;
    while (i < n && i - w < 12 && (line_is_upper(s[i]) || s[i] == '_'))
      i++;
    size_t wl = i - w;
    int64_t num;
    if (wl < 2 || !line_num(s, n, &i, 1, 6, &num)) return 0;
    if (wl == 2 && s[w] == 'T' && s[w + 1] == 'P')
      v = num;
    else
      others++;
    tags++;
  }
  if (!tags || !line_lit(s, n, i, "]")) return 0;
  if (!others) *tp = v;
  return i;
}

/* A bracketed timestamp and what may follow it:
 *   "[2024-05-14 10:21:33,412] [INFO] [engine.py:1899:forward] "  DeepSpeed
 *   "[2023-11-07 12:01:02,123] torch.distributed.elastic...: [ERROR] "
 *   "[2025-03-10T15:07:20Z] " (Buildkite and other CI/collector stamps). */
static size_t line_try_ts_bracket(const char *s, size_t n, line_state_t *st) {
  line_time_t t = {0};
  size_t i = 1;
  int64_t tp = -1;
  if (n < 21 || s[0] != '[' || !line_is_digit(s[1])) return 0;
  if (!line_datetime(s, n, &i, &t)) return 0;
  if (!line_lit(s, n, i, "]") && !(i = line_parallel_tags(s, n, i, &tp))) return 0;
  i++;
  line_set_ts(st, &t);
  if (tp >= 0) line_set_rank(st, tp);
  if (!line_lit(s, n, i, " ")) {
    st->meta->dialects |= DDX_DIALECT_ISO_TIME;
    st->after_ts = 1;
    return i;
  }
  size_t j = i + 1, len = 0;
  char level;
  if (j < n && s[j] == '[' && (level = line_level_word(s + j + 1, n - j - 1, &len)) != 0 &&
      line_lit(s, n, j + 1 + len, "]")) {
    /* DeepSpeed: [LEVEL] then usually [file:line:function] */
    j = line_one_space(s, n, j + len + 2);
    if (j < n && s[j] == '[') {
      size_t end = line_file_line_end(s, n, j + 1);
      if (end) j = line_one_space(s, n, end);
    }
    line_set_level(st, level);
    st->meta->dialects |= DDX_DIALECT_DS_ASCTIME;
    st->outer = 0;
    return j;
  }
  /* torch elastic: a dotted logger name, ": [LEVEL] " */
  size_t k = j;
  while (k < n && k - j < LINE_LOGGER_MAX && (line_is_alnum(s[k]) || s[k] == '_' || s[k] == '.'))
    k++;
  if (k > j && line_is_alpha(s[j]) && line_lit(s, n, k, ": [") &&
      (level = line_level_word(s + k + 3, n - k - 3, &len)) != 0 &&
      line_lit(s, n, k + 3 + len, "]")) {
    line_set_level(st, level);
    st->meta->dialects |= DDX_DIALECT_TORCH_ELASTIC;
    st->outer = 0;
    return line_one_space(s, n, k + 4 + len);
  }
  st->meta->dialects |= DDX_DIALECT_ISO_TIME;
  st->after_ts = 1;
  return i + 1;
}

/* A bare timestamp at the front: "2024-11-20 14:37:16 [rank3]: ...",
 * "2021-12-08T15:12:02Z INFO ...", kubectl's "...T10:21:33.123456789Z ". */
static size_t line_try_ts_bare(const char *s, size_t n, line_state_t *st) {
  line_time_t t = {0};
  size_t i = 0;
  if (n < 19 || s[4] != '-' || (s[10] != ' ' && s[10] != 'T')) return 0;
  if (!line_datetime(s, n, &i, &t)) return 0;
  if (i < n && s[i] != ' ') return 0;
  line_set_ts(st, &t);
  st->meta->dialects |= DDX_DIALECT_ISO_TIME;
  st->after_ts = 1;
  return line_one_space(s, n, i);
}

/* vLLM: "ERROR 03-10 15:07:20 [core.py:708] " and the older
 * "INFO 01-22 14:32:19 llm_engine.py:73] ". Recorded as GLOG: the header
 * has no vLLM bit, and this is a glog-shaped level/date/time/file:line. */
static size_t line_try_vllm(const char *s, size_t n, line_state_t *st) {
  line_time_t t = {0};
  size_t len = 0, i;
  int64_t mo, d;
  char level = line_level_word(s, n, &len);
  if (!level || !line_lit(s, n, len, " ")) return 0;
  i = len + 1;
  if (!line_num(s, n, &i, 2, 2, &mo) || !line_lit(s, n, i, "-")) return 0;
  i++;
  if (!line_num(s, n, &i, 2, 2, &d) || !line_valid_md(mo, d) || !line_lit(s, n, i, " ")) return 0;
  i++;
  if (!line_hms(s, n, &i, &t) || !line_lit(s, n, i, " ")) return 0;
  i++;
  size_t end = line_file_line_end(s, n, (i < n && s[i] == '[') ? i + 1 : i);
  if (!end) return 0;
  t.year = 0;
  t.month = mo;
  t.day = d;
  return line_glog_done(s, n, end, level, &t, st);
}

/* "[1,3]<stderr>:" from mpirun --tag-output: [jobid,rank]<stream>. */
static size_t line_try_mpirun(const char *s, size_t n, line_state_t *st) {
  size_t i = 1;
  int64_t job, rank;
  uint8_t stream;
  size_t tag;
  if (n < 14 || s[0] != '[') return 0;
  if (!line_num(s, n, &i, 1, 9, &job) || !line_lit(s, n, i, ",")) return 0;
  i++;
  if (!line_num(s, n, &i, 1, 7, &rank) || !line_lit(s, n, i, "]<")) return 0;
  i += 2;
  if (line_lit(s, n, i, "stdout>:")) {
    stream = 1;
    tag = 8;
  } else if (line_lit(s, n, i, "stderr>:")) {
    stream = 2;
    tag = 8;
  } else if (line_lit(s, n, i, "stddiag>:")) {
    stream = 2;
    tag = 9;
  } else {
    return 0;
  }
  i += tag;
  line_set_rank(st, rank);
  line_set_stream(st, stream);
  st->meta->dialects |= DDX_DIALECT_MPIRUN;
  st->outer = 0;
  return line_one_space(s, n, i);
}

/* "[default3]:" / "[trainer3]:": torchrun --tee, [{role}{local_rank}]:.
 * torchrun writes the message right after the colon, so no space is
 * consumed. A bare "[3]:" (the ChildFailedError table) has no role and is
 * not a prefix. */
static size_t line_try_tee(const char *s, size_t n, line_state_t *st) {
  size_t i = 1;
  if (n < 4 || s[0] != '[' || !(line_is_alpha(s[1]) || s[1] == '_')) return 0;
  while (i < n && i < 64 && (line_is_alnum(s[i]) || s[i] == '_'))
    i++;
  if (!line_lit(s, n, i, "]:")) return 0;
  size_t d = i;
  while (d > 1 && line_is_digit(s[d - 1]))
    d--;
  if (d == i || d == 1) return 0;
  int64_t local;
  size_t k = d;
  if (!line_num(s, n, &k, 1, 7, &local)) return 0;
  line_set_local_rank(st, local);
  st->meta->dialects |= DDX_DIALECT_TORCHRUN_TEE;
  st->outer = 0;
  return i + 2;
}

/* "[12345] " line numbers from a log viewer (outer layer only). */
static size_t line_try_viewer_bracket(const char *s, size_t n, line_state_t *st) {
  size_t i = 1;
  int64_t v;
  if (!st->outer || n < 4 || s[0] != '[') return 0;
  if (!line_num(s, n, &i, 1, 9, &v) || !line_lit(s, n, i, "] ") || i + 2 >= n) return 0;
  st->meta->dialects |= DDX_DIALECT_VIEWER_LINENO;
  return i + 2;
}

/* "12345 | " line numbers from a log viewer (outer layer only). */
static size_t line_try_viewer_pipe(const char *s, size_t n, line_state_t *st) {
  size_t i = 0;
  int64_t v;
  if (!st->outer || !line_num(s, n, &i, 1, 9, &v)) return 0;
  if (line_lit(s, n, i, " | ")) {
    i += 3;
  } else if (i + 2 == n && line_lit(s, n, i, " |")) {
    i += 2;
  } else {
    return 0;
  }
  st->meta->dialects |= DDX_DIALECT_VIEWER_LINENO;
  return i;
}

/* "[stderr]" / "[stdout]" (Azure ML): the message follows without a space. */
static size_t line_try_stdio_bracket(const char *s, size_t n, line_state_t *st) {
  if (line_lit(s, n, 0, "[stderr]")) {
    line_set_stream(st, 2);
  } else if (line_lit(s, n, 0, "[stdout]")) {
    line_set_stream(st, 1);
  } else {
    return 0;
  }
  st->meta->dialects |= DDX_DIALECT_PLATFORM;
  return 8;
}

/* "stderr: " / "stdout: " written by job platforms before each line. */
static size_t line_try_stdio_word(const char *s, size_t n, line_state_t *st) {
  if (line_lit(s, n, 0, "stderr:")) {
    line_set_stream(st, 2);
  } else if (line_lit(s, n, 0, "stdout:")) {
    line_set_stream(st, 1);
  } else {
    return 0;
  }
  st->meta->dialects |= DDX_DIALECT_PLATFORM;
  return line_one_space(s, n, 7);
}

/* axolotl's "[PID:123] " and "[RANK:3] " (global rank) after its asctime. */
static size_t line_try_axolotl(const char *s, size_t n, line_state_t *st) {
  size_t i;
  int64_t v;
  int is_rank;
  if (line_lit(s, n, 0, "[PID:")) {
    i = 5;
    is_rank = 0;
  } else if (line_lit(s, n, 0, "[RANK:")) {
    i = 6;
    is_rank = 1;
  } else {
    return 0;
  }
  if (!line_num(s, n, &i, 1, 9, &v) || !line_lit(s, n, i, "]")) return 0;
  if (is_rank) line_set_rank(st, v);
  st->meta->dialects |= DDX_DIALECT_PLATFORM;
  st->outer = 0;
  return line_one_space(s, n, i + 1);
}

/* transformers' logger: "[INFO|configuration_utils.py:458] 2023-10-19
 * 09:48:55,234 >> ". Filed under DS_ASCTIME, the Python-logger-with-asctime
 * bit; there is no bit of its own. */
static size_t line_try_hf(const char *s, size_t n, line_state_t *st) {
  line_time_t t = {0};
  size_t len = 0, i;
  char level;
  if (n < 8 || s[0] != '[' || (level = line_level_word(s + 1, n - 1, &len)) == 0 ||
      !line_lit(s, n, 1 + len, "|"))
    return 0;
  i = line_file_line_end(s, n, len + 2);
  if (!i || !line_lit(s, n, i, " ")) return 0;
  i++;
  if (!line_datetime(s, n, &i, &t) || !line_lit(s, n, i, " >>")) return 0;
  line_set_level(st, level);
  line_set_ts(st, &t);
  st->meta->dialects |= DDX_DIALECT_DS_ASCTIME;
  st->outer = 0;
  return line_one_space(s, n, i + 3);
}

/* "[cosmos] 2026-05-14 05:28:06,261 ...": a bracketed service/program tag
 * in front of a timestamp (outer layer only). The timestamp is what makes
 * it a prefix: "[deepspeed] OVERFLOW!" alone is message text. No host is
 * recorded, as the tag is usually a program name. */
static size_t line_try_tag_before_ts(const char *s, size_t n, line_state_t *st) {
  line_time_t t = {0};
  size_t i = 1;
  if (!st->outer || n < 4 || s[0] != '[' || !line_is_alpha(s[1])) return 0;
  while (i < n && i < 64 && (line_is_host_char(s[i]) || s[i] == '_'))
    i++;
  if (!line_lit(s, n, i, "] ")) return 0;
  size_t j = i + 2;
  if (!line_datetime(s, n, &j, &t)) return 0;
  st->meta->dialects |= DDX_DIALECT_PLATFORM;
  return i + 2;
}

/* "[dlc1abc-master-0] ": a pod/host name in brackets at the start of the
 * line. Demands a letter, a digit and a dash so that "[c10d]", "[Torch]",
 * "[deepspeed]" or "[2024-...]" stay message text. */
static size_t line_try_pod(const char *s, size_t n, line_state_t *st) {
  size_t i = 1;
  int has_alpha = 0, has_digit = 0, has_dash = 0;
  if (!st->outer || n < 4 || s[0] != '[') return 0;
  for (; i < n && i <= LINE_TOKEN_MAX; i++) {
    char c = s[i];
    if (c == ']') break;
    if (!line_is_host_char(c) && c != '_') return 0;
    has_alpha |= line_is_alpha(c);
    has_digit |= line_is_digit(c);
    has_dash |= c == '-';
  }
  if (!line_lit(s, n, i, "] ") || i + 2 >= n || !has_alpha || !has_digit || !has_dash) return 0;
  if (!line_is_alnum(s[1]) || (line_lower(s[1]) == 'r' && line_lit(s, n, 2, "ank"))) return 0;
  line_set_host(st, s + 1, i - 1);
  st->meta->dialects |= DDX_DIALECT_PLATFORM;
  return i + 2;
}

/* Ray: "(WorkerDict pid=26110) ", "(VllmWorker TP0 pid=34941) ",
 * "(RayWorkerWrapper pid=1, ip=10.0.0.3) ". ip= names the node. */
static size_t line_try_ray(const char *s, size_t n, line_state_t *st) {
  size_t i = 1, ip = 0, ip_len = 0;
  int has_pid = 0, others = 0;
  int64_t rank = -1, tp = -1;
  if (n < 7 || s[0] != '(') return 0;
  for (; i < n && i < LINE_RAY_MAX; i++) {
    char c = s[i];
    if (c == ')') break;
    /* vLLM's workers: "rank=5" (the engine's global rank), or "TP3" (the
     * rank when no PP/DP dimension is named): "(VllmWorker rank=5 pid=1)",
     * "(VllmWorker TP3 pid=1)", "(Worker_PP1_TP0 pid=1)" */
    if ((s[i - 1] == ' ' || s[i - 1] == '_') && i + 2 < n) {
      size_t j = i;
      int64_t v;
      if (line_lit(s, n, i, "rank=") && (j = i + 5, line_num(s, n, &j, 1, 6, &v)))
        rank = v;
      else if ((c == 'P' || c == 'D' || c == 'E') && s[i + 1] == 'P' && line_is_digit(s[i + 2]))
        others++;
      else if (c == 'T' && s[i + 1] == 'P' && (j = i + 2, line_num(s, n, &j, 1, 6, &v)) &&
               (j >= n || s[j] == ' ' || s[j] == '_' || s[j] == ')'))
        tp = v;
    }
    if (!line_is_alnum(c) && c != ' ' && c != '_' && c != ',' && c != '.' && c != '=' && c != ':' &&
        c != '-' && c != '+' && c != '/')
      return 0;
    if (c == '=' && i >= 3 && memcmp(s + i - 3, "pid", 3) == 0 && i + 1 < n &&
        line_is_digit(s[i + 1]))
      has_pid = 1;
    if (c == '=' && i >= 2 && memcmp(s + i - 2, "ip", 2) == 0 &&
        (i == 3 || s[i - 3] == ' ' || s[i - 3] == ',')) {
      ip = i + 1;
      ip_len = 0;
      while (ip + ip_len < n && line_is_host_char(s[ip + ip_len]))
        ip_len++;
    }
  }
  if (i >= n || s[i] != ')' || !has_pid) return 0;
  if (ip_len > 0) line_set_host(st, s + ip, ip_len);
  if (rank >= 0)
    line_set_rank(st, rank);
  else if (tp >= 0 && !others)
    line_set_rank(st, tp);
  st->meta->dialects |= DDX_DIALECT_RAY;
  st->outer = 0;
  return line_one_space(s, n, i + 1);
}

/* Markdown quoting: "> " or a lone ">" (outer layer only). */
static size_t line_try_markdown(const char *s, size_t n, line_state_t *st) {
  if (!st->outer || n == 0 || s[0] != '>' || (n > 1 && s[1] != ' ')) return 0;
  st->meta->dialects |= DDX_DIALECT_MARKDOWN;
  return n > 1 ? 2 : 1;
}

/* FastChat's logger after its wall clock: "| ERROR | stderr | ". Its
 * stderr redirect logs everything at ERROR, so the level is only believed
 * for real logger names, not for stderr/stdout. */
static size_t line_try_fastchat(const char *s, size_t n, line_state_t *st) {
  size_t len = 0, i, name;
  char level;
  if (n < 8 || s[0] != '|' || s[1] != ' ') return 0;
  level = line_level_word(s + 2, n - 2, &len);
  if (!level || !line_lit(s, n, 2 + len, " | ")) return 0;
  name = i = 5 + len;
  while (i < n && i - name < 64 &&
         (line_is_alnum(s[i]) || s[i] == '_' || s[i] == '.' || s[i] == '-'))
    i++;
  if (i == name || !line_lit(s, n, i, " |")) return 0;
  if (i - name == 6 && memcmp(s + name, "stderr", 6) == 0) {
    line_set_stream(st, 2);
  } else if (i - name == 6 && memcmp(s + name, "stdout", 6) == 0) {
    line_set_stream(st, 1);
  } else {
    line_set_level(st, level);
  }
  st->meta->dialects |= DDX_DIALECT_PLATFORM;
  st->outer = 0;
  return line_one_space(s, n, i + 2);
}

/* The level of a Python logger header after a bare timestamp:
 * "2021-12-08T15:12:02Z INFO     Switching ...", "... ERROR [__main__] ...".
 * Only right after a timestamp: "ERROR something" alone is message text. */
static size_t line_try_level_after_ts(const char *s, size_t n, line_state_t *st, int after_ts) {
  size_t len = 0, i;
  char level;
  if (!after_ts || (level = line_level_word(s, n, &len)) == 0 || !line_lit(s, n, len, " "))
    return 0;
  i = len;
  while (i < n && i - len < 16 && s[i] == ' ')
    i++;
  if (i >= n) return 0;
  line_set_level(st, level);
  st->meta->dialects |= DDX_DIALECT_ISO_TIME;
  st->outer = 0;
  return i;
}

/* "- name - LEVEL - " (or "- LEVEL - name - ") after a bare timestamp: the
 * '%(asctime)s - %(name)s - %(levelname)s - %(message)s' logging format. */
static size_t line_try_dash_logger(const char *s, size_t n, line_state_t *st, int after_ts) {
  size_t i = 2, len = 0;
  char level = 0;
  if (!after_ts || !line_lit(s, n, 0, "- ")) return 0;
  for (int field = 0; field < 2; field++) {
    size_t start = i;
    char lv;
    while (i < n && i - start < 64 &&
           (line_is_alnum(s[i]) || s[i] == '_' || s[i] == '.' || s[i] == '-'))
      i++;
    if (i == start || !line_lit(s, n, i, " - ")) return 0;
    if ((lv = line_level_word(s + start, i - start, &len)) != 0 && len == i - start) level = lv;
    i += 3;
  }
  if (!level) return 0;
  line_set_level(st, level);
  st->meta->dialects |= DDX_DIALECT_ISO_TIME;
  st->outer = 0;
  return i;
}

/* pdsh (DeepSpeed's multi-node launcher): "worker-1: " / "10.1.0.3: ". */
static size_t line_try_pdsh(const char *s, size_t n, line_state_t *st) {
  size_t i = 0;
  if (!st->outer) return 0;
  while (i < n && i < LINE_TOKEN_MAX && line_is_host_char(s[i]))
    i++;
  if (i == 0 || !line_lit(s, n, i, ":")) return 0;
  int ip = line_is_ipv4(s, i);
  size_t rest;
  if (line_lit(s, n, i, ": ") && (i + 2 < n || ip)) {
    rest = i + 2;
  } else if (ip && i + 1 == n) {
    rest = n; /* an empty line under an IP prefix */
  } else {
    return 0;
  }
  if (!ip && !line_is_hostlike(s, i)) return 0;
  line_set_host(st, s, i);
  st->meta->dialects |= DDX_DIALECT_PDSH;
  return rest;
}

/* NCCL's own tag on INFO/WARN lines: "g2001:34292:39682 [7] " is host,
 * pid, thread id and the CUDA device (the local rank's GPU). */
static size_t line_try_nccl_tag(const char *s, size_t n, line_state_t *st) {
  size_t i = 0;
  while (i < n && i < LINE_TOKEN_MAX && line_is_host_char(s[i]) && s[i] != ':')
    i++;
  if (i == 0 || i >= n || s[i] != ':') return 0;
  size_t host_len = i++;
  int64_t pid, tid, dev;
  if (!line_num(s, n, &i, 1, 10, &pid) || !line_lit(s, n, i, ":")) return 0;
  i++;
  if (!line_num(s, n, &i, 1, 10, &tid) || !line_lit(s, n, i, " [")) return 0;
  i += 2;
  if (!line_num(s, n, &i, 1, 4, &dev) || !line_lit(s, n, i, "] ")) return 0;
  line_set_host(st, s, host_len);
  line_set_local_rank(st, dev);
  st->meta->pid = pid;
  st->meta->dialects |= DDX_DIALECT_NCCL_TAG;
  (void)tid;
  return i + 2;
}

/* docker-compose: "trainer-1  | " / "trainer_1  | " (outer layer only). */
static size_t line_try_compose(const char *s, size_t n, line_state_t *st) {
  size_t i = 0;
  if (!st->outer || n == 0 || !line_is_alpha(s[0])) return 0;
  while (i < n && i < 64 && (line_is_host_char(s[i]) || s[i] == '_'))
    i++;
  size_t d = i;
  while (d > 0 && line_is_digit(s[d - 1]))
    d--;
  if (d == i || d < 2 || (s[d - 1] != '-' && s[d - 1] != '_')) return 0;
  size_t j = i;
  while (j < n && s[j] == ' ')
    j++;
  if (j == i || j >= n || s[j] != '|' || (j + 1 < n && s[j + 1] != ' ')) return 0;
  line_set_host(st, s, i);
  st->meta->dialects |= DDX_DIALECT_PLATFORM;
  return line_one_space(s, n, j + 1);
}

/* srun --label: " 2: " / "12: " (global rank, outer layer only). */
static size_t line_try_srun(const char *s, size_t n, line_state_t *st) {
  size_t i = 0;
  int64_t r;
  if (!st->outer) return 0;
  while (i < n && i < 6 && s[i] == ' ')
    i++;
  if (!line_num(s, n, &i, 1, 6, &r) || !line_lit(s, n, i, ":")) return 0;
  if (i + 1 < n && s[i + 1] != ' ') return 0;
  line_set_rank(st, r);
  st->srun_task = r;
  st->meta->dialects |= DDX_DIALECT_SRUN;
  st->outer = 0;
  return line_one_space(s, n, i + 1);
}

/* Buildkite's "  | " gutter (exactly two spaces: Megatron's hard-wrapped
 * " | lm loss: ..." continuation lines have one and are message text). */
static size_t line_try_gutter(const char *s, size_t n, line_state_t *st) {
  if (!st->outer || !line_lit(s, n, 0, "  |") || (n > 3 && s[3] != ' ')) return 0;
  st->meta->dialects |= DDX_DIALECT_PLATFORM;
  return n > 3 ? 4 : 3;
}

/* Prefixes that start with blanks: srun's padded label, the Buildkite
 * gutter, and a DeepSpeed/ISO bracket stamp pushed right by another rank's
 * output interleaved on the same line (the stamp is unambiguous). */
static size_t line_try_space(const char *s, size_t n, line_state_t *st) {
  size_t k, i = 0;
  if ((k = line_try_gutter(s, n, st)) || (k = line_try_srun(s, n, st))) return k;
  while (i < n && i < LINE_TOKEN_MAX && (s[i] == ' ' || s[i] == '\t'))
    i++;
  if (i < n && s[i] == '[' && (k = line_try_ts_bracket(s + i, n - i, st))) return i + k;
  return 0;
}

static size_t line_try_bracket(const char *s, size_t n, line_state_t *st) {
  size_t k;
  if (n < 2) return 0;
  if (line_is_digit(s[1])) {
    if ((k = line_try_ts_bracket(s, n, st)) || (k = line_try_mpirun(s, n, st)) ||
        (k = line_try_viewer_bracket(s, n, st)))
      return k;
    return 0;
  }
  if ((k = line_try_rank(s, n, st)) || (k = line_try_glog_bracket(s, n, st)) ||
      (k = line_try_stdio_bracket(s, n, st)) || (k = line_try_axolotl(s, n, st)) ||
      (k = line_try_tee(s, n, st)) || (k = line_try_hf(s, n, st)) || (k = line_try_pod(s, n, st)) ||
      (k = line_try_tag_before_ts(s, n, st)))
    return k;
  return 0;
}

/* One prefix at s, dispatched on its first byte so that an ordinary line
 * ("  File ...", "RuntimeError: ...") costs a couple of comparisons. */
static size_t line_try_prefix(const char *s, size_t n, line_state_t *st) {
  size_t k = 0;
  int after_ts = st->after_ts;
  if (n == 0) return 0;
  st->after_ts = 0;
  char c = s[0];
  switch (c) {
  case '-':
    return line_try_dash_logger(s, n, st, after_ts);
  case '[':
    return line_try_bracket(s, n, st);
  case '(':
    return line_try_ray(s, n, st);
  case '>':
    return line_try_markdown(s, n, st);
  case '|':
    return line_try_fastchat(s, n, st);
  case ' ':
  case '\t':
    return line_try_space(s, n, st);
  default:
    break;
  }
  if (line_is_digit(c) || line_is_alpha(c)) {
    if ((k = line_try_nccl_tag(s, n, st))) return k;
  }
  if (line_is_digit(c)) {
    if ((k = line_try_ts_bare(s, n, st)) || (k = line_try_srun(s, n, st)) ||
        (k = line_try_viewer_pipe(s, n, st)) || (k = line_try_pdsh(s, n, st)))
      return k;
    return 0;
  }
  if (!line_is_alpha(c)) return 0;
  if (c == 'r' && (k = line_try_rank(s, n, st))) return k;
  if (c == 's' && (k = line_try_stdio_word(s, n, st))) return k;
  if (line_is_upper(c) && ((k = line_try_glog_bare(s, n, st)) || (k = line_try_vllm(s, n, st)) ||
                           (k = line_try_level_after_ts(s, n, st, after_ts))))
    return k;
  if ((k = line_try_compose(s, n, st)) || (k = line_try_pdsh(s, n, st))) return k;
  return 0;
}

/* ---- ANSI ---- */

/* Bytes that may start something to remove; everything else is copied in
 * runs. 0x1b ESC, '[' a bare "[36m" remnant, '^' caret notation "^[[0m",
 * and NUL. */
static int line_is_special(unsigned char c) {
  return c == 0x1b || c == '[' || c == '^' || c == 0;
}

/* Length of an SGR remnant "[1;31m" at in[i] (the ESC lost), or 0. */
static size_t line_sgr_remnant(const char *in, size_t len, size_t i) {
  size_t j = i + 1;
  int digits = 0;
  while (j < len && j - i <= 16 && (line_is_digit(in[j]) || in[j] == ';')) {
    digits |= line_is_digit(in[j]);
    j++;
  }
  return (digits && j < len && in[j] == 'm') ? j + 1 - i : 0;
}

/* Length of the escape sequence starting with ESC at in[i] (at least 1:
 * a lone ESC, also one at the end of a line, is dropped). */
static size_t line_escape_len(const char *in, size_t len, size_t i) {
  size_t j = i + 1;
  if (j >= len) return 1;
  unsigned char c = (unsigned char)in[j];
  if (c == '[') { /* CSI: parameters, intermediates, one final byte */
    j++;
    while (j < len && (unsigned char)in[j] >= 0x30 && (unsigned char)in[j] <= 0x3f)
      j++;
    while (j < len && (unsigned char)in[j] >= 0x20 && (unsigned char)in[j] <= 0x2f)
      j++;
    if (j < len && (unsigned char)in[j] >= 0x40 && (unsigned char)in[j] <= 0x7e) j++;
    return j - i;
  }
  if (c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_') {
    /* OSC/DCS/SOS/PM/APC: a string up to BEL or ST (ESC \). A new ESC
     * ends an unterminated string so that the next sequence is seen. */
    for (j++; j < len; j++) {
      if (in[j] == 0x07) return j + 1 - i;
      if (in[j] == 0x1b) return (j + 1 < len && in[j + 1] == '\\') ? j + 2 - i : j - i;
    }
    return j - i;
  }
  /* Other escapes: intermediates then one final byte ("ESC ( B", "ESC 7"). */
  while (j < len && (unsigned char)in[j] >= 0x20 && (unsigned char)in[j] <= 0x2f)
    j++;
  if (j < len && (unsigned char)in[j] >= 0x30 && (unsigned char)in[j] <= 0x7e) j++;
  return j - i;
}

/* Removes escapes (and NULs when drop_nul) from in into out, writing at
 * most cap-1 bytes and a NUL. Sets *changed when an escape was removed. */
static size_t line_clean(const char *in, size_t len, char *out, size_t cap, int drop_nul,
                         int *changed) {
  size_t o = 0, i = 0;
  if (cap == 0) return 0;
  while (i < len && o + 1 < cap) {
    size_t run = i;
    while (run < len && !line_is_special((unsigned char)in[run]))
      run++;
    if (run > i) {
      size_t m = run - i;
      if (m > cap - 1 - o) m = cap - 1 - o;
      memcpy(out + o, in + i, m);
      o += m;
      i += m;
      continue;
    }
    char c = in[i];
    size_t skip = 0;
    if (c == 0x1b) {
      skip = line_escape_len(in, len, i);
    } else if (c == '[') {
      skip = line_sgr_remnant(in, len, i);
    } else if (c == '^') {
      if (i + 2 < len && in[i + 1] == '[' && in[i + 2] == '[') {
        size_t r = line_sgr_remnant(in, len, i + 2);
        skip = r ? r + 2 : 0;
      }
    } else if (drop_nul) {
      i++;
      continue;
    }
    if (skip) {
      *changed = 1;
      i += skip;
    } else {
      out[o++] = c;
      i++;
    }
  }
  out[o] = '\0';
  return o;
}

/* ---- public API ---- */

void ddx_line_meta_init(ddx_line_meta_t *meta) {
  if (!meta) return;
  meta->rank = -1;
  meta->local_rank = -1;
  meta->host[0] = '\0';
  meta->ts_ms = -1;
  meta->pid = -1;
  meta->stream = 0;
  meta->level = 0;
  meta->dialects = 0;
}

size_t ddx_line_strip_ansi(const char *in, size_t len, char *out, size_t cap) {
  int changed = 0;
  if (!in) len = 0;
  return line_clean(in, len, out, cap, 0, &changed);
}

size_t ddx_line_normalize(const char *in, size_t len, char *out, size_t cap,
                          ddx_line_meta_t *meta) {
  char buf[DDX_LINE_MAX + 1];
  ddx_line_meta_t scratch;
  line_state_t st;
  int changed = 0;
  size_t n, pos = 0;

  if (!meta) {
    ddx_line_meta_init(&scratch);
    meta = &scratch;
  }
  if (!in) len = 0;
  if (len > DDX_LINE_MAX) len = DDX_LINE_MAX;
  n = line_clean(in, len, buf, sizeof buf, 1, &changed);
  if (changed) meta->dialects |= DDX_DIALECT_ANSI;
  /* A CRLF file read line by line leaves the CR behind. */
  while (n > 0 && buf[n - 1] == '\r')
    n--;

  st.meta = meta;
  st.seen = 0;
  st.outer = 1;
  st.after_ts = 0;
  st.srun_task = -1;
  st.inner_rank = -1;
  unsigned had_tee = meta->dialects & DDX_DIALECT_TORCHRUN_TEE;
  /* Slurm's %t file (slurm-<job>-3.out, layout.c) gives its lines srun's id */
  int64_t file_task = (meta->dialects & DDX_DIALECT_SRUN) ? meta->rank : -1;
  for (;;) {
    size_t k = line_try_prefix(buf + pos, n - pos, &st);
    if (k == 0) break;
    pos += k;
  }
  int64_t task = st.srun_task >= 0 ? st.srun_task : file_task;
  /* srun -l over torchrun ("3: [default1]:"): srun runs one task per node,
   * so its id names the node, not the global rank; the node becomes the
   * line's host ("srun-task-3") and the global rank comes from the layout */
  if (task >= 0 && !had_tee && (meta->dialects & DDX_DIALECT_TORCHRUN_TEE) &&
      meta->rank == (int32_t)task) {
    meta->rank = -1;
    if (!meta->host[0]) snprintf(meta->host, DDX_HOST_MAX, "srun-task-%lld", (long long)task);
    meta->dialects |= DDX_DIALECT_SRUN_NODE;
  }
  /* "3: [rank27]:" (srun -l over mp.spawn or torchrun, torch >= 2.3): the
   * process's own rank prefix disagrees with srun's id, which then names
   * the node's task */
  if (task >= 0 && meta->rank == (int32_t)task && st.inner_rank >= 0 && st.inner_rank != task) {
    meta->rank = (int32_t)st.inner_rank;
    if (!meta->host[0]) snprintf(meta->host, DDX_HOST_MAX, "srun-task-%lld", (long long)task);
    meta->dialects |= DDX_DIALECT_SRUN_NODE;
  } else if (st.srun_task < 0 && file_task >= 0 && meta->rank >= 0 && meta->rank != file_task &&
             !meta->host[0]) { /* the same in a %t file: its [rank27]: replaced the file's id */
    snprintf(meta->host, DDX_HOST_MAX, "srun-task-%lld", (long long)file_task);
    meta->dialects |= DDX_DIALECT_SRUN_NODE;
  }

  /* "[Rank 5] Watchdog caught ..." / DeepSpeed's "[Rank 0] step=..." is
   * message text and stays, but it names the rank when no prefix did, or
   * when srun's id on the line is not this rank. Lightning's
   * rank_prefixed_message writes "[rank: 1] " (some copies "[rank 1] "),
   * trlx "[RANK 0] ". */
  static const char *const rank_words[] = {"[Rank ", "[RANK ", "[rank ", "[rank: ", NULL};
  size_t rank_word = 0;
  for (size_t k = 0; rank_words[k] && !rank_word; k++)
    if (line_lit(buf, n, pos, rank_words[k])) rank_word = strlen(rank_words[k]);
  if (rank_word) {
    size_t i = pos + rank_word;
    int64_t r;
    int named = line_num(buf, n, &i, 1, 7, &r) && line_lit(buf, n, i, "]");
    if (named && meta->rank < 0) {
      meta->rank = (int32_t)r;
    } else if (named && task >= 0 && meta->rank == (int32_t)task && r != task) {
      /* srun -l's id is not the rank this process names: srun runs one
       * task per node (torchrun, mp.spawn under it), the id names the node */
      meta->rank = (int32_t)r;
      if (!meta->host[0]) snprintf(meta->host, DDX_HOST_MAX, "srun-task-%lld", (long long)task);
      meta->dialects |= DDX_DIALECT_SRUN_NODE;
    }
  }

  if (cap == 0) return 0;
  size_t m = n - pos;
  if (m > cap - 1) m = cap - 1;
  memcpy(out, buf + pos, m);
  out[m] = '\0';
  return m;
}
