// A <select> of manifest entries: one option per entry, labelled with its label (or id); an entry whose weights
// are not published yet is listed, disabled, "(not available yet)", so the page shows what is missing.

/** Fills select with entries and selects the first available one; returns it (null when none is available). */
export function fillModelPicker(select, entries, available) {
  for (const entry of entries) {
    const option = document.createElement('option');
    option.textContent = `${entry.label ?? entry.id}${available(entry) ? '' : ' (not available yet)'}`;
    option.value = entry.id;
    option.disabled = !available(entry);
    select.append(option);
  }
  const first = entries.find(available) ?? null;
  if (first) select.value = first.id;
  return first;
}

/** The entry the picker shows. */
export const pickedEntry = (select, entries) => entries.find((entry) => entry.id === select.value);
