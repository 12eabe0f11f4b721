#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "scale/svgplot.h"

#define W 900
#define H 560
#define L 80
#define R 220
#define T 50
#define B 60

typedef struct { double x0, x1, y0, y1; } box;

static double px(const box *b, double x) { return L + (log10(x) - b->x0) / (b->x1 - b->x0) * (W - L - R); }
static double py(const box *b, double y) { return H - B - (y - b->y0) / (b->y1 - b->y0) * (H - T - B); }

static box bounds(const svg_series *s, size_t n) {
    box b = {INFINITY, -INFINITY, INFINITY, -INFINITY};
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < s[i].n; k++) {
            if (!(s[i].x[k] > 0) || !isfinite(s[i].y[k])) continue;
            b.x0 = fmin(b.x0, log10(s[i].x[k]));
            b.x1 = fmax(b.x1, log10(s[i].x[k]));
            b.y0 = fmin(b.y0, s[i].lo ? s[i].lo[k] : s[i].y[k]);
            b.y1 = fmax(b.y1, s[i].hi ? s[i].hi[k] : s[i].y[k]);
        }
    if (!(b.x1 > b.x0)) { b.x0 -= 0.5; b.x1 += 0.5; }
    if (!(b.y1 > b.y0)) { b.y0 -= 0.5; b.y1 += 0.5; }
    double pad = 0.04 * (b.y1 - b.y0);
    b.y0 -= pad;
    b.y1 += pad;
    return b;
}

sx_status svgplot_write(const char *path, const char *title, const char *x_label, const char *y_label,
                        const svg_series *s, size_t n) {
    FILE *f = fopen(path, "w");
    if (!f) return sx_fail(SX_ERR_IO, "%s: cannot create (%s)", path, strerror(errno));
    box b = bounds(s, n);
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"%d\" y=\"28\" font-size=\"16\">%s</text>\n", L, title);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n", L, T, W - L - R, H - T - B);
    for (int e = (int)floor(b.x0); e <= (int)ceil(b.x1); e++)
        for (int m = 1; m < 10; m++) {
            double x = m * pow(10, e);
            if (log10(x) < b.x0 || log10(x) > b.x1) continue;
            double X = px(&b, x);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\"/>\n", X, T, X, H - B, m == 1 ? "#ccc" : "#eee");
            if (m == 1) fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">1e%d</text>\n", X, H - B + 18, e);
        }
    double step = pow(10, floor(log10((b.y1 - b.y0) / 5)));
    for (double y = ceil(b.y0 / step) * step; y <= b.y1; y += step) {
        double Y = py(&b, y);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/><text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.3g</text>\n",
                L, Y, W - R, Y, L - 6, Y + 4, y);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", (L + W - R) / 2, H - 15, x_label);
    fprintf(f, "<text transform=\"translate(20,%d) rotate(-90)\" text-anchor=\"middle\">%s</text>\n", (T + H - B) / 2, y_label);
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
            if (q->x[k] > 0 && isfinite(q->y[k])) fprintf(f, "%.1f,%.1f ", px(&b, q->x[k]), py(&b, q->y[k]));
        fprintf(f, "\"/>\n");
        for (size_t k = 0; q->markers && k < q->n; k++)
            if (q->x[k] > 0 && isfinite(q->y[k]))
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n", px(&b, q->x[k]), py(&b, q->y[k]), q->color);
        double ly = T + 16 + 18.0 * (double)i;
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/><text x=\"%d\" y=\"%.1f\">%s</text>\n",
                W - R + 12, ly, W - R + 36, ly, q->color, q->dashed ? " stroke-dasharray=\"6,4\"" : "", W - R + 42, ly + 4, q->label);
    }
    fprintf(f, "</svg>\n");
    return fclose(f) ? sx_fail(SX_ERR_IO, "%s: write failed", path) : SX_OK;
}
