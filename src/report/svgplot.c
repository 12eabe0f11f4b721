// svgplot: see svgplot.h. Fixed 900 x 560 canvas; the plot area leaves room for the legend on the right.
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/fsutil.h"
#include "report/svgplot.h"

#define W 900
#define H 560
#define L 80
#define R 220
#define T 60
#define B 60

typedef struct { double x0, x1, y0, y1; } box;

static double px(const box *b, double x) { return L + (log10(x) - b->x0) / (b->x1 - b->x0) * (W - L - R); }
static double py(const box *b, double y) { return H - B - (y - b->y0) / (b->y1 - b->y0) * (H - T - B); }
static bool plottable(const svg_series *s, size_t k) { return s->x[k] > 0 && isfinite(s->y[k]); }

static box bounds(const svg_series *s, size_t n) {
    box b = {INFINITY, -INFINITY, INFINITY, -INFINITY};
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < s[i].n; k++) {
            if (!plottable(&s[i], k)) continue;
            b.x0 = fmin(b.x0, log10(s[i].x[k]));
            b.x1 = fmax(b.x1, log10(s[i].x[k]));
            b.y0 = fmin(b.y0, s[i].y[k]);
            b.y1 = fmax(b.y1, s[i].y[k]);
            if (s[i].lo && isfinite(s[i].lo[k])) b.y0 = fmin(b.y0, s[i].lo[k]);
            if (s[i].hi && isfinite(s[i].hi[k])) b.y1 = fmax(b.y1, s[i].hi[k]);
        }
    if (!(b.x1 > b.x0)) { b.x0 = isfinite(b.x0) ? b.x0 - 0.5 : 0; b.x1 = b.x0 + 1; }
    if (!(b.y1 > b.y0)) { b.y0 = isfinite(b.y0) ? b.y0 - 0.5 : 0; b.y1 = b.y0 + 1; }
    double pad = 0.04 * (b.y1 - b.y0);
    b.y0 -= pad;
    b.y1 += pad;
    return b;
}

size_t svgplot_ticks(double lo, double hi, double *ticks, size_t max) {
    if (!(hi > lo) || !isfinite(lo) || !isfinite(hi) || max == 0) return 0;
    static const double mant[] = {1, 2, 2.5, 5};
    double step = 0;
    // The smallest round step giving at most 8 ticks; the next smaller one gave more than 8, and the steps
    // grow by at most 2x, so this one gives at least 4.
    for (double e = floor(log10((hi - lo) / 8)) - 1; step == 0; e++)
        for (size_t m = 0; m < 4 && step == 0; m++) {
            double s = mant[m] * pow(10, e);
            if (floor(hi / s) - ceil(lo / s) + 1 <= 8) step = s;
        }
    size_t n = 0;
    for (double k = ceil(lo / step); k <= floor(hi / step) && n < max; k++) {
        double v = k * step;
        ticks[n++] = fabs(v) < 1e-12 * step ? 0 : v;
    }
    return n;
}

void svgplot_escape(FILE *f, const char *s) {
    for (; s && *s; s++)
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
}

// Tick labels with as many decimals as the step needs (2.5 x 10^k needs one more than 10^k).
static void tick_label(char *out, size_t cap, double v, double step) {
    int dec = (int)ceil(-log10(step) - 1e-9);
    if (fabs(step / pow(10, floor(log10(step) + 1e-9)) - 2.5) < 1e-9) dec++;
    if (dec < 0) dec = 0;
    if (dec > 8 || fabs(v) >= 1e6) snprintf(out, cap, "%.4g", v);
    else snprintf(out, cap, "%.*f", dec, v);
}

// The title on one line, or on two when it is longer than the canvas holds (broken at the last space that
// fits; a space-less title is cut there).
static void print_title(FILE *f, const char *title) {
    enum { FITS = 100 };
    size_t len = strlen(title ? title : ""), cut = len;
    if (len > FITS) {
        cut = FITS;
        while (cut > FITS / 2 && title[cut] != ' ') cut--;
        if (title[cut] != ' ') cut = FITS;
    }
    fprintf(f, "<text class=\"title\" x=\"%d\" y=\"24\" font-size=\"15\"><tspan>", L - 60);
    char first[FITS + 1];   // cut <= FITS: the first line fits on the stack, no allocation to fail
    memcpy(first, title ? title : "", cut);
    first[cut] = 0;
    svgplot_escape(f, first);
    fprintf(f, "</tspan>");
    if (cut < len) {
        fprintf(f, "<tspan x=\"%d\" dy=\"19\">", L - 60);
        svgplot_escape(f, title + cut + (title[cut] == ' '));
        fprintf(f, "</tspan>");
    }
    fprintf(f, "</text>\n");
}

static void legend(FILE *f, size_t row, const char *color, bool dashed, bool ring, const char *label, size_t count) {
    double ly = T + 16 + 18.0 * (double)row;
    if (ring)
        fprintf(f, "<circle cx=\"%d\" cy=\"%.1f\" r=\"5\" fill=\"none\" stroke=\"#d00\" stroke-width=\"1.8\"/>", W - R + 24, ly);
    else
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/>", W - R + 12, ly,
                W - R + 36, ly, color, dashed ? " stroke-dasharray=\"6,4\"" : "");
    fprintf(f, "<text class=\"legend\" x=\"%d\" y=\"%.1f\">", W - R + 42, ly + 4);
    svgplot_escape(f, label);
    if (ring) fprintf(f, " (%zu)", count);
    fprintf(f, "</text>\n");
}

bool svgplot_print(FILE *f, const char *title, const char *x_label, const char *y_label, const svg_series *s, size_t n) {
    box b = bounds(s, n);
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n", W, H, W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    print_title(f, title);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n", L, T, W - L - R, H - T - B);
    for (int e = (int)floor(b.x0); e <= (int)ceil(b.x1); e++)
        for (int m = 1; m < 10; m++) {
            double x = m * pow(10, e);
            if (log10(x) < b.x0 || log10(x) > b.x1) continue;
            double X = px(&b, x);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\"/>\n", X, T, X, H - B, m == 1 ? "#ccc" : "#eee");
            if (m == 1) fprintf(f, "<text class=\"xtick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">1e%d</text>\n", X, H - B + 18, e);
        }
    double ticks[16];
    size_t nt = svgplot_ticks(b.y0, b.y1, ticks, 16);
    for (size_t i = 0; i < nt; i++) {
        char text[32];
        tick_label(text, sizeof text, ticks[i], nt > 1 ? ticks[1] - ticks[0] : 1);
        double Y = py(&b, ticks[i]);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/><text class=\"ytick\" x=\"%d\" y=\"%.1f\" "
                   "text-anchor=\"end\">%s</text>\n", L, Y, W - R, Y, L - 6, Y + 4, text);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", (L + W - R) / 2, H - 15);
    svgplot_escape(f, x_label);
    fprintf(f, "</text>\n<text transform=\"translate(20,%d) rotate(-90)\" text-anchor=\"middle\">", (T + H - B) / 2);
    svgplot_escape(f, y_label);
    fprintf(f, "</text>\n");
    size_t row = 0;
    for (size_t i = 0; i < n; i++) {
        const svg_series *q = &s[i];
        if (q->lo && q->hi && q->n) {
            fprintf(f, "<polygon fill=\"%s\" fill-opacity=\"0.18\" stroke=\"none\" points=\"", q->color);
            for (size_t k = 0; k < q->n; k++) fprintf(f, "%.1f,%.1f ", px(&b, q->x[k]), py(&b, q->hi[k]));
            for (size_t k = q->n; k-- > 0;) fprintf(f, "%.1f,%.1f ", px(&b, q->x[k]), py(&b, q->lo[k]));
            fprintf(f, "\"/>\n");
        }
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\"%s points=\"", q->color,
                q->dashed ? " stroke-dasharray=\"6,4\"" : "");
        for (size_t k = 0; k < q->n; k++)
            if (plottable(q, k)) fprintf(f, "%.1f,%.1f ", px(&b, q->x[k]), py(&b, q->y[k]));
        fprintf(f, "\"/>\n");
        size_t flagged = 0;
        for (size_t k = 0; k < q->n; k++) {
            if (!plottable(q, k)) continue;
            if (q->markers)
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n", px(&b, q->x[k]), py(&b, q->y[k]), q->color);
            if (q->flagged && q->flagged[k]) {
                flagged++;
                fprintf(f, "<circle class=\"outside\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"none\" stroke=\"#d00\" "
                           "stroke-width=\"1.8\"/>\n", px(&b, q->x[k]), py(&b, q->y[k]));
            }
        }
        legend(f, row++, q->color, q->dashed, false, q->label, 0);
        if (q->flagged) legend(f, row++, NULL, false, true, "outside the band", flagged);
    }
    fprintf(f, "</svg>\n");
    return !ferror(f);
}

sx_status svgplot_write(const char *path, const char *title, const char *x_label, const char *y_label,
                        const svg_series *s, size_t n) {
    fs_buffer b;   // drawn into memory, then written atomically: never half a plot over an old one
    sx_status st = fs_buffer_open(&b);
    if (st) return st;
    bool ok = svgplot_print(b.f, title, x_label, y_label, s, n);
    return fs_buffer_commit(&b, path, ok ? SX_OK : sx_fail(SX_ERR_IO, "%s: write failed", path));
}
