/* Sizes on the tools' command lines: "8", "512K", "1.5M", "2G" (powers of
 * 1024, either case). */
#ifndef DPC_TOOL_SIZES_H
#define DPC_TOOL_SIZES_H

#include <stdlib.h>
#include <string.h>

/* bytes, or 0 where s is not such a size (empty, negative, another
 * letter after the number, anything after the letter), so that each tool
 * refuses it with its option's name rather than timing some other size */
static inline size_t tool_parse_size(const char *s)
{
    char *e;
    if (!s || strchr(s, '-'))
        return 0;
    double v = strtod(s, &e);
    if (e == s)
        return 0;
    switch (*e) {
    case 'k': case 'K': v *= 1024; e++; break;
    case 'm': case 'M': v *= 1024 * 1024; e++; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; e++; break;
    }
    return *e || !(v >= 1) || v > 1e18 ? 0 : (size_t)v;
}

#endif
