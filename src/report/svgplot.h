// svgplot: a minimal SVG line chart (log-x, linear-y) for ladder curves, forecasts with bands, and
// observed runs. Not a plotting library: lines, a shaded band, points flagged as outside it, axes with a
// handful of round ticks, a title and a legend. Text is XML-escaped, so any run or ladder name can be
// part of a title. Writes a file, or into an open stream (the HTML report inlines its plots).
#ifndef SEXTANT_REPORT_SVGPLOT_H
#define SEXTANT_REPORT_SVGPLOT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "core/status.h"

typedef struct {
    const char *label;
    const double *x, *y;     // (n) x > 0
    const double *lo, *hi;   // optional band (n), NULL for none
    const bool *flagged;     // optional (n): points drawn with a red ring and counted in the legend
                             // ("outside the band"), NULL for none
    size_t n;
    const char *color;       // CSS colour
    bool dashed, markers;
} svg_series;

// Writes the chart to path. title names what is plotted (ladder, run, schedule); x_label/y_label name the
// axes.
sx_status svgplot_write(const char *path, const char *title, const char *x_label, const char *y_label,
                        const svg_series *series, size_t n_series);
// The same chart as one <svg> element written to f (no XML prolog). Returns false on a write error.
bool svgplot_print(FILE *f, const char *title, const char *x_label, const char *y_label,
                   const svg_series *series, size_t n_series);

// Round tick values for a linear axis over [lo, hi]: a step of 1, 2, 2.5 or 5 x 10^k giving 4 to 8 ticks
// inside the range (fewer only for a degenerate range). ticks: (max) overwritten; returns the count.
size_t svgplot_ticks(double lo, double hi, double *ticks, size_t max);

// Writes s to f with &, <, >, " escaped for XML/HTML text and attributes.
void svgplot_escape(FILE *f, const char *s);

#endif
