#!/bin/sh
# tpsdb: refresh the due sources; when that changed the dataset, rewrite the seed and republish the static site.
# Used by deploy/crontab and deploy/systemd/tpsdb-refresh.service. "Changed" means data/seed.sql's bytes changed
# (the seed is written deterministically from the curated tables), so an hourly run that found nothing new
# republishes nothing. The site is also published when it is missing (the first run).
#
# Settings (environment): TPSDB_HOME the checkout (default: this script's parent folder), TPSDB the command
# (default .venv/bin/tpsdb there), TPSDB_SITE the site folder (default site), TPSDB_SEED the seed file (default
# data/seed.sql), TPSDB_SOURCES_DIR a folder of source files (default sources/); the database is --db's default
# or $TPSDB_DATABASE_URL.
# Exit status: refresh's (0 all sources fine, 1 one failed; the others' figures are still published), or the
# first failing step's.
set -u
cd "${TPSDB_HOME:-$(dirname "$0")/..}" || exit 2
TPSDB=${TPSDB:-.venv/bin/tpsdb}
SITE=${TPSDB_SITE:-site}
SEED=${TPSDB_SEED:-data/seed.sql}

before=$(cat "$SEED" 2>/dev/null | cksum)
if [ -n "${TPSDB_SOURCES_DIR:-}" ]; then
  $TPSDB refresh --due --sources-dir "$TPSDB_SOURCES_DIR"
else
  $TPSDB refresh --due
fi
refreshed=$?
[ "$refreshed" -gt 1 ] && exit "$refreshed"  # 2: unusable database or lock, 3: another refresh runs
$TPSDB export-seed --out "$SEED" || exit $?
after=$(cksum < "$SEED")
if [ "$before" != "$after" ] || [ ! -f "$SITE/index.html" ]; then
  $TPSDB publish --out "$SITE" || exit $?
  echo "published $SITE"
else
  echo "dataset unchanged: $SITE left as it is"
fi
exit "$refreshed"
