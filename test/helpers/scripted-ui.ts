// A scripted UI for Pi sessions in rpc mode: a plain object with every ExtensionUIContext method, recording what the
// extension shows (notices, statuses, widgets) and answering select() from a queue.
export interface ScriptedUI {
  ui: Record<string, unknown>;
  notices: { text: string; level?: string }[];
  statuses: Map<string, string | undefined>;
  statusHistory: (string | undefined)[];
  widgets: Map<string, unknown>;
  /** Answers for select(), in order; each gets the title and options and returns the choice. */
  selects: ((title: string, options: string[]) => string | undefined)[];
  selectCalls: { title: string; options: string[] }[];
}

export function scriptedUI(): ScriptedUI {
  const s: ScriptedUI = {
    ui: {},
    notices: [],
    statuses: new Map(),
    statusHistory: [],
    widgets: new Map(),
    selects: [],
    selectCalls: [],
  };
  const theme = { fg: (_c: string, t: string) => t, bg: (_c: string, t: string) => t, bold: (t: string) => t };
  s.ui = {
    select: async (title: string, options: string[]) => {
      s.selectCalls.push({ title, options });
      return s.selects.shift()?.(title, options);
    },
    confirm: async () => false,
    input: async () => undefined,
    notify: (text: string, level?: string) => s.notices.push({ text, ...(level ? { level } : {}) }),
    onTerminalInput: () => () => {},
    setStatus: (key: string, text: string | undefined) => {
      s.statuses.set(key, text);
      if (key === "code-execution") s.statusHistory.push(text);
    },
    setWorkingMessage: () => {},
    setWorkingVisible: () => {},
    setWorkingIndicator: () => {},
    setHiddenThinkingLabel: () => {},
    setWidget: (key: string, content: unknown) => s.widgets.set(key, content),
    setFooter: () => {},
    setHeader: () => {},
    setTitle: () => {},
    custom: async () => undefined,
    pasteToEditor: () => {},
    setEditorText: () => {},
    getEditorText: () => "",
    editor: async () => undefined,
    addAutocompleteProvider: () => {},
    setEditorComponent: () => {},
    getEditorComponent: () => undefined,
    theme,
    getAllThemes: () => [],
    getTheme: () => undefined,
    setTheme: () => ({ success: false }),
    getToolsExpanded: () => false,
    setToolsExpanded: () => {},
  };
  return s;
}

