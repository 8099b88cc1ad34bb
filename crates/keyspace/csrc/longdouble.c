/*
 * INCRBYFLOAT arithmetic in the platform's `long double`, because that is what Redis computes
 * in: replies must match it digit for digit (80-bit extended precision on x86-64, printed with
 * 17 fractional digits), which no Rust float type can reproduce.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The longest text accepted or produced, as Redis's MAX_LONG_DOUBLE_CHARS. */
#define LD_MAX_CHARS (5 * 1024)

/* Parses `s` (not NUL-terminated) the way Redis validates a float argument. */
static int parse_ld(const unsigned char *s, size_t len, long double *out) {
    char buf[LD_MAX_CHARS];
    char *end;
    long double v;
    if (len == 0 || len >= sizeof(buf)) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (isspace((unsigned char)buf[0])) return 0;
    errno = 0;
    v = strtold(buf, &end);
    if (*end != '\0' || (size_t)(end - buf) != len) return 0;
    if (errno == EINVAL || isnan(v)) return 0;
    if (errno == ERANGE && (v == HUGE_VALL || v == -HUGE_VALL || fpclassify(v) == FP_ZERO))
        return 0;
    *out = v;
    return 1;
}

/*
 * cur + incr, formatted as Redis stores it. Returns the text length, or -1 when either input
 * is not a float, -2 when the sum is NaN or infinite, -3 when `out` is too small.
 */
long rialto_ld_add(const unsigned char *cur, size_t cur_len, const unsigned char *incr,
                   size_t incr_len, char *out, size_t out_len) {
    long double a, b, sum;
    int n;
    if (!parse_ld(cur, cur_len, &a) || !parse_ld(incr, incr_len, &b)) return -1;
    sum = a + b;
    if (isnan(sum) || isinf(sum)) return -2;
    n = snprintf(out, out_len, "%.17Lf", sum);
    if (n < 0 || (size_t)n + 1 > out_len) return -3;
    if (strchr(out, '.') != NULL) {
        while (n > 0 && out[n - 1] == '0') n--;
        if (n > 0 && out[n - 1] == '.') n--;
    }
    if (n == 2 && out[0] == '-' && out[1] == '0') {
        out[0] = '0';
        n = 1;
    }
    out[n] = '\0';
    return n;
}
