/**
 * `%%durable` cells for the language servers of jupyterlab-lsp: each such cell becomes a
 * Python document of its own whose first line is the magic as a comment of the same length
 * (`#%durable NAME`), so `lil lsp` analyses it as the durable cell it is and every position
 * maps back to the cell one to one. Without this, jupyterlab-lsp rewrites the cell into
 * `get_ipython().run_cell_magic(...)` (the body in a string, one line fewer) and silences
 * every diagnostic inside it.
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import {
  IExtractedCode,
  IForeignCodeExtractor,
  ILSPCodeExtractorsManager
} from '@jupyterlab/lsp';

const MAGIC = /^%%durable(?=\s)/;

/** The end of `code` as a 0-based line and column. */
function endOf(code: string): { line: number; column: number } {
  const lines = code.split('\n');
  return { line: lines.length - 1, column: lines[lines.length - 1].length };
}

export class DurableCellExtractor implements IForeignCodeExtractor {
  readonly language = 'python';
  readonly cellType = ['code'];
  readonly standalone = true; // one document per cell: a cell is one durable run
  readonly fileExtension = 'py';

  hasForeignCode(code: string, cellType: string): boolean {
    return cellType === 'code' && MAGIC.test(code);
  }

  extractForeignCode(code: string): IExtractedCode[] {
    const start = { line: 0, column: 0 };
    return [
      {
        hostCode: '',
        foreignCode: code.replace(MAGIC, '#%durable'),
        range: { start, end: endOf(code) },
        virtualShift: null
      }
    ];
  }
}

export const durableCells: JupyterFrontEndPlugin<void> = {
  id: 'letitloop:lsp-durable-cells',
  description: '%%durable cells as Python documents for the language servers (lil lsp)',
  autoStart: true,
  optional: [ILSPCodeExtractorsManager],
  activate: (_app: JupyterFrontEnd, extractors: ILSPCodeExtractorsManager | null) => {
    extractors?.register(new DurableCellExtractor(), 'python');
  }
};
