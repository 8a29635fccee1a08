/**
 * A fake Origin Private File System behind `navigator.storage.getDirectory()`: directories
 * and files in memory, a file's new bytes visible only once its writable stream closes (as
 * in browsers), and a byte quota past which writes fail with `QuotaExceededError`.
 */

class FakeFile {
  bytes = new Uint8Array(0);
}

class FakeWritable {
  private buffer = new Uint8Array(0);
  constructor(
    private readonly file: FakeFile,
    private readonly fs: FakeOpfs,
  ) {}
  async write(data: Uint8Array): Promise<void> {
    await Promise.resolve();
    if (this.fs.used() + data.length > this.fs.quota) throw new DOMException('quota exceeded', 'QuotaExceededError');
    const next = new Uint8Array(this.buffer.length + data.length);
    next.set(this.buffer);
    next.set(data, this.buffer.length);
    this.buffer = next;
  }
  async close(): Promise<void> {
    await Promise.resolve();
    this.file.bytes = this.buffer;
  }
  async abort(): Promise<void> {}
}

export class FakeFileHandle {
  readonly kind = 'file';
  constructor(
    readonly name: string,
    readonly file: FakeFile,
    private readonly fs: FakeOpfs,
  ) {}
  async getFile(): Promise<File> {
    return new File([this.file.bytes.slice()], this.name);
  }
  async createWritable(): Promise<FakeWritable> {
    return new FakeWritable(this.file, this.fs);
  }
}

export class FakeDirectoryHandle {
  readonly kind = 'directory';
  readonly children = new Map<string, FakeDirectoryHandle | FakeFileHandle>();
  constructor(
    readonly name: string,
    private readonly fs: FakeOpfs,
  ) {}
  async getDirectoryHandle(name: string, options?: { create?: boolean }): Promise<FakeDirectoryHandle> {
    const found = this.children.get(name);
    if (found instanceof FakeDirectoryHandle) return found;
    if (found || !options?.create) throw new DOMException(`no directory ${name}`, 'NotFoundError');
    const dir = new FakeDirectoryHandle(name, this.fs);
    this.children.set(name, dir);
    return dir;
  }
  async getFileHandle(name: string, options?: { create?: boolean }): Promise<FakeFileHandle> {
    const found = this.children.get(name);
    if (found instanceof FakeFileHandle) return found;
    if (found || !options?.create) throw new DOMException(`no file ${name}`, 'NotFoundError');
    const file = new FakeFileHandle(name, new FakeFile(), this.fs);
    this.children.set(name, file);
    return file;
  }
  async removeEntry(name: string, options?: { recursive?: boolean }): Promise<void> {
    const child = this.children.get(name);
    if (!child) throw new DOMException(`no entry ${name}`, 'NotFoundError');
    if (child instanceof FakeDirectoryHandle && child.children.size > 0 && !options?.recursive) {
      throw new DOMException(`${name} is not empty`, 'InvalidModificationError');
    }
    this.children.delete(name);
  }
  async *entries(): AsyncIterableIterator<[string, FakeDirectoryHandle | FakeFileHandle]> {
    for (const entry of [...this.children]) yield entry;
  }
  /** Every file below, by path. */
  files(prefix = ''): Map<string, FakeFile> {
    const out = new Map<string, FakeFile>();
    for (const [name, child] of this.children) {
      if (child instanceof FakeFileHandle) out.set(prefix + name, child.file);
      else for (const [p, f] of child.files(`${prefix}${name}/`)) out.set(p, f);
    }
    return out;
  }
}

export class FakeOpfs {
  readonly root = new FakeDirectoryHandle('', this);
  quota = Infinity;
  used(): number {
    let n = 0;
    for (const f of this.root.files().values()) n += f.bytes.length;
    return n;
  }
}

/** Installs `fs` (or no OPFS at all, for null); returns the function that undoes it. */
export function installOpfs(fs: FakeOpfs | null): () => void {
  const g = globalThis as Record<string, unknown>;
  const hadHandle = 'FileSystemFileHandle' in g;
  const realHandle = g.FileSystemFileHandle;
  const nav = Object.getOwnPropertyDescriptor(globalThis, 'navigator');
  const storage = fs ? { getDirectory: async () => fs.root } : undefined;
  Object.defineProperty(globalThis, 'navigator', {
    value: { ...(globalThis.navigator ?? {}), storage },
    configurable: true,
    writable: true,
  });
  g.FileSystemFileHandle = FakeFileHandle;
  return () => {
    if (nav) Object.defineProperty(globalThis, 'navigator', nav);
    else delete g.navigator;
    if (hadHandle) g.FileSystemFileHandle = realHandle;
    else delete g.FileSystemFileHandle;
  };
}
