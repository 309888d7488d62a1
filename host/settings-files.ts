// The one write to the settings files the extension asks for: pi-python's old global file
// (`~/.pi/pi-python/settings.json`) moved to its place under Pi's agent directory, as pi-python does on upgrade. The
// extension asks at each Pi session's start, before it reads the settings (extension/environment.ts); the move
// itself is the store's (store/settings.ts), which reads settings everywhere else.

/** Moves pi-python's old settings file when the new place has none; says what happened (a notice), or undefined. */
export { migratePiPythonSettings as moveLegacySettings } from "../store/settings.ts";
