#!/usr/bin/env bash
# Copy a folder into a dated backup archive and keep only the seven newest archives.
set -euo pipefail

src=${1:?usage: backup.sh FOLDER [DEST]}
dest=${2:-$HOME/backups}
mkdir -p "$dest"
archive="$dest/$(basename "$src")-$(date +%Y-%m-%d).tar.gz"
tar -czf "$archive" -C "$(dirname "$src")" "$(basename "$src")"
echo "wrote $archive ($(du -h "$archive" | cut -f1))"
ls -1t "$dest"/*.tar.gz | tail -n +8 | xargs -r rm --
