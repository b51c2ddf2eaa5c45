#!/usr/bin/env bash
# Add DiffMem Studio to the desktop's application menu (for this user), or remove it.
# Shipped inside the application folder next to the `diffmem` executable:
#
#   ./install-desktop-entry.sh            # writes ~/.local/share/applications/diffmem.desktop
#   ./install-desktop-entry.sh --remove
#
# The entry points at this folder: run it again after moving the folder.
set -euo pipefail
here="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
data="${XDG_DATA_HOME:-$HOME/.local/share}"
apps="$data/applications"
icons="$data/icons/hicolor/256x256/apps"

if [[ "${1:-}" == "--remove" ]]; then
    rm -f "$apps/diffmem.desktop" "$icons/diffmem.png"
    echo "removed the DiffMem Studio menu entry"
    exit 0
fi
if [[ ! -x "$here/diffmem" || ! -f "$here/diffmem.desktop" ]]; then
    echo "install-desktop-entry.sh: run it from the DiffMem Studio folder (diffmem not found" \
         "next to it)" >&2
    exit 1
fi
mkdir -p "$apps" "$icons"
cp "$here/diffmem.png" "$icons/diffmem.png"
# Exec/TryExec: this folder's executable. Exec is quoted as the desktop entry spec wants:
# \ " $ ` get a backslash inside the quotes, then string escaping doubles every backslash.
exe="$here/diffmem"
quoted="${exe//\\/\\\\}"
quoted="${quoted//\"/\\\"}"
quoted="${quoted//\$/\\\$}"
quoted="${quoted//\`/\\\`}"
quoted="${quoted//\\/\\\\}"      # then the string escape: every backslash doubled
while IFS= read -r line; do
    case "$line" in
        Exec=*) printf 'Exec="%s"\n' "$quoted" ;;
        TryExec=*) printf 'TryExec=%s\n' "$exe" ;;
        *) printf '%s\n' "$line" ;;
    esac
done < "$here/diffmem.desktop" > "$apps/diffmem.desktop.tmp"
mv "$apps/diffmem.desktop.tmp" "$apps/diffmem.desktop"
command -v update-desktop-database >/dev/null && update-desktop-database -q "$apps" || true
echo "added DiffMem Studio to the application menu: $apps/diffmem.desktop"
