# Sourced by the GPU scripts' --prepare steps. What travels to the GPU machine is the working tree (tracked
# and untracked files git does not ignore) plus the carried paths, 64 MiB in all, counted as an archive
# counts them: a 512-byte header per file and each file padded to 512 bytes (about 1.8 MB for the tree's
# 2400 files).
CARRY_LIMIT_BYTES=$(( 64 * 1024 * 1024 ))
# Reads NUL-separated paths; prints their archived size in bytes.
archived_bytes() { xargs -0 stat -c %s 2>/dev/null | awk '{s += 512 + int(($1 + 511) / 512) * 512} END {print s + 0}'; }
tree_archived_bytes() { git ls-files -z --cached --others --exclude-standard | archived_bytes; }
# The archived size of the files under each folder given (0 for a missing one).
folders_archived_bytes() { find "$@" -type f -print0 2>/dev/null | archived_bytes; }
