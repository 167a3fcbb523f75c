/* Printing verdict rows: the validate table, TAP 13, JSON, the metrics table. */
#ifndef RA_AUDIT_REPORT_H
#define RA_AUDIT_REPORT_H

#include <stdio.h>

#include "audit/audit.h"
#include "core/table.h"

/*
 * Tables go to stdout in any ra_format (text, md, csv, json).  The
 * validate table has one line per row:
 *     variant | shape | regime | dtype | tensor | metric | value | gate | pass
 * The metrics table (check, audit) has one line per (variant, tensor) with
 * every metric, the worst element and a gates column summarising the rows
 * of that tensor ("pass", "FAIL rel_rms", "skip", "-").
 */

ra_status ra_report_validate_table(FILE *f, const ra_rows *rows, ra_format fmt);
ra_status ra_report_metrics_table(FILE *f, const ra_rows *rows, ra_format fmt, int with_variant);

/* After a table: every FAIL row with its reason and the command that
   reproduces it, then "N passed, M failed, K skipped". */
void ra_report_failures(FILE *f, const ra_rows *rows);
void ra_report_summary(FILE *f, const ra_rows *rows);

/* TAP version 13: one test point per row; FAIL rows carry a YAML block
   (message, got, expect, worst element, reproduce); skipped rows the SKIP
   directive with the reason. */
void ra_report_tap(FILE *f, const ra_rows *rows);

/* JSON document {"command", "passed", "failed", "skipped", "rows": [...]}
   with every row, its full metrics and worst element, to path ("-":
   stdout).  Written through a temporary file and rename. */
ra_status ra_report_json(const char *path, const ra_rows *rows, const char *command);

#endif
