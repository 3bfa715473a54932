// E2B's official SDK (npm e2b, unchanged) against `sbx serve`: sandbox.files
// (GET/POST /files, and the filesystem.Filesystem calls once the Connect
// dispatcher serves them), E2B's user `user`, signed URLs, and attacks.
// Usage: node files.mjs CASE, with E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY
// pointing at the server. Exits non-zero with a message on the first failed
// check. Every case kills what it creates.
import net from 'node:net';
import { FileNotFoundError, Sandbox, TimeoutError } from 'e2b';

const [name] = process.argv.slice(2);
const url = process.env.E2B_SANDBOX_URL;
const created = [];

function check(cond, msg, extra) {
	if (!cond) {
		throw new Error(`check failed: ${msg}${extra === undefined ? '' : `: ${JSON.stringify(extra)}`}`);
	}
}

async function create(opts) {
	const s = await Sandbox.create(opts);
	created.push(s);
	return s;
}

async function throwsA(fn, cls, msg) {
	try {
		await fn();
	} catch (e) {
		check(!cls || e instanceof cls, `${msg}: ${cls?.name}`, `${e?.name}: ${e?.message}`);
		return e;
	}
	check(false, `${msg}: no error`);
}

// A raw /files request as the SDK's envd client makes one.
async function files(method, query, { id, token, body, headers = {} } = {}) {
	if (process.env.FILES_DEBUG) console.error(method, JSON.stringify(query), body?.length);
	const h = { ...headers };
	if (id) {
		h['E2b-Sandbox-Id'] = id;
		h['E2b-Sandbox-Port'] = '49983';
	}
	if (token) h['X-Access-Token'] = token;
	const r = await fetch(`${url}/files?${new URLSearchParams(query)}`, { method, headers: h, body });
	return { status: r.status, body: Buffer.from(await r.arrayBuffer()) };
}

// Sends a request's line and headers only, and resolves with what comes
// back within 15 s (the status line and headers, or '' if nothing came).
function rawHeaders(u, method, headers) {
	return new Promise((resolve) => {
		const sock = net.connect(Number(u.port || 80), u.hostname);
		let got = '';
		const done = () => {
			sock.destroy();
			resolve(got);
		};
		const timer = setTimeout(done, 15000);
		sock.on('connect', () => {
			const lines = [`${method} ${u.pathname}${u.search} HTTP/1.1`, `Host: ${u.host}`];
			for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
			sock.write(lines.join('\r\n') + '\r\n\r\n');
		});
		sock.on('data', (d) => {
			got += d.toString('latin1');
			if (got.includes('\r\n\r\n')) {
				clearTimeout(timer);
				done();
			}
		});
		sock.on('error', () => {});
		sock.on('close', () => {
			clearTimeout(timer);
			resolve(got);
		});
	});
}

function multipart(boundary, parts, { close = true } = {}) {
	const chunks = [];
	for (const [filename, data] of parts) {
		chunks.push(
			Buffer.from(
				`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\n` +
					'Content-Type: application/octet-stream\r\n\r\n',
			),
			Buffer.from(data),
			Buffer.from('\r\n'),
		);
	}
	if (close) chunks.push(Buffer.from(`--${boundary}--\r\n`));
	return Buffer.concat(chunks);
}

const cases = {
	// Text and binary round trips, several files at once, read formats,
	// FileNotFoundError, E2B's user and its home.
	async roundtrip() {
		const s = await create();
		const info = await s.files.write('/home/user/hello.txt', 'hello, sbx\n');
		check(info.path === '/home/user/hello.txt' && info.name === 'hello.txt', 'write() info', info);
		check((await s.files.read('/home/user/hello.txt')) === 'hello, sbx\n', 'text round trip');
		// relative paths are the user's home, as on E2B
		await s.files.write('rel.txt', 'relative');
		check((await s.files.read('/home/user/rel.txt')) === 'relative', 'relative path: /home/user');

		const bin = new Uint8Array(70000);
		for (let i = 0; i < bin.length; i++) bin[i] = (i * 7 + (i >> 8)) & 0xff;
		bin.set([13, 10, 45, 45], 1000); // CRLF-- inside the data
		await s.files.write('/tmp/x/y/bin.dat', bin.buffer); // parents made
		const back = await s.files.read('/tmp/x/y/bin.dat', { format: 'bytes' });
		check(back.length === bin.length && Buffer.compare(Buffer.from(back), Buffer.from(bin)) === 0, 'binary round trip');
		const blob = await s.files.read('/tmp/x/y/bin.dat', { format: 'blob' });
		check(blob.size === bin.length, 'blob format', blob.size);

		const many = await s.files.write([
			{ path: '/home/user/m/a.txt', data: 'A' },
			{ path: '/home/user/m/b.txt', data: new Blob(['BB']) },
			{ path: '/home/user/m/c/d.txt', data: 'DDD' },
		]);
		check(many.length === 3 && many.map((f) => f.name).join() === 'a.txt,b.txt,d.txt', 'several files at once', many);
		check((await s.files.read('/home/user/m/c/d.txt')) === 'DDD', 'third file');

		// an empty file
		await s.files.write('/home/user/empty', '');
		check((await s.files.read('/home/user/empty')) === '', 'empty file');
		// gzip both ways (octet-stream upload with Content-Encoding: gzip)
		await s.files.write('/home/user/gz.txt', 'x'.repeat(100000), { gzip: true });
		check((await s.files.read('/home/user/gz.txt', { gzip: true })) === 'x'.repeat(100000), 'gzip round trip');
		// octet-stream upload (a stream)
		await s.files.write('/home/user/stream.txt', new Blob(['streamed']).stream());
		check((await s.files.read('/home/user/stream.txt')) === 'streamed', 'octet-stream upload');

		await throwsA(() => s.files.read('/home/user/nope'), FileNotFoundError, 'missing file');
		const dir = await files('GET', { path: '/home/user' }, { id: s.sandboxId, token: s.envdAccessToken });
		check(dir.status === 400, 'reading a directory: 400', dir.status);

		// the owner of what the SDK writes is E2B's user, uid 1000
		const st = await files('GET', { path: '/etc/passwd' }, { id: s.sandboxId, token: s.envdAccessToken });
		check(st.status === 200 && /^user:x:1000:1000::\/home\/user:\/bin\/bash$/m.test(st.body.toString()), 'user in passwd', st.body.toString());
		// as root, a file user cannot read
		await s.files.write('/root/secret', 'root only', { user: 'root' });
		const denied = await files('GET', { path: '/root/secret' }, { id: s.sandboxId, token: s.envdAccessToken });
		check(denied.status === 403, 'user cannot read /root', denied.status);
		check((await s.files.read('/root/secret', { user: 'root' })) === 'root only', 'root reads it');
		const nouser = await files('GET', { path: '/etc/hostname', username: 'nosuchuser' }, { id: s.sandboxId, token: s.envdAccessToken });
		check(nouser.status >= 400 && nouser.status < 500 && nouser.status !== 404, 'unknown username refused', nouser.status);
	},

	// The owner of written files is `user` (checked with the library's view:
	// the Filesystem calls, or through a command when they are not served).
	async owner() {
		const s = await create();
		await s.files.write('/home/user/owned.txt', 'mine');
		await s.files.write('/tmp/deep/dir/owned.txt', 'mine');
		const st = await fetch(`${url}/filesystem.Filesystem/Stat`, {
			method: 'POST',
			headers: {
				'Content-Type': 'application/json',
				'E2b-Sandbox-Id': s.sandboxId,
				'E2b-Sandbox-Port': '49983',
				'X-Access-Token': s.envdAccessToken,
			},
			body: JSON.stringify({ path: '/home/user/owned.txt' }),
		});
		if (st.status === 501) {
			console.log('SKIP-FS: filesystem.Filesystem not served yet');
			return;
		}
		const i = await s.files.getInfo('/home/user/owned.txt');
		check(i.owner === 'user' && i.group === 'user', 'owner of a written file', i);
		const d = await s.files.getInfo('/tmp/deep');
		check(d.owner === 'user' && d.type === 'dir', 'owner of a parent made for it', d);
		const h = await s.files.getInfo('/home/user');
		check(h.owner === 'user', 'home belongs to user', h);
	},

	// filesystem.Filesystem: list with depth, exists/getInfo, makeDir twice,
	// rename, remove, and a symlink that points "out".
	async fs() {
		const s = await create();
		await s.files.write([
			{ path: '/home/user/t/a.txt', data: 'a' },
			{ path: '/home/user/t/b/c.txt', data: 'cc' },
			{ path: '/home/user/t/b/d/e.txt', data: 'eee' },
		]);
		const one = await s.files.list('/home/user/t');
		check(one.map((e) => e.name).join() === 'a.txt,b', 'list depth 1', one);
		const a = one[0];
		check(a.type === 'file' && a.size === 1 && a.path === '/home/user/t/a.txt' && a.owner === 'user', 'entry fields', a);
		check(a.permissions === '-rw-r--r--' && a.modifiedTime instanceof Date && Date.now() - a.modifiedTime < 600000, 'permissions and mtime', a);
		check(one[1].type === 'dir' && one[1].permissions === 'drwxr-xr-x', 'a directory entry', one[1]);
		const all = await s.files.list('/home/user/t', { depth: 3 });
		check(all.map((e) => e.path.replace('/home/user/t/', '')).join() === 'a.txt,b,b/c.txt,b/d,b/d/e.txt', 'list depth 3, pre-order', all.map((e) => e.path));
		const two = await s.files.list('t', { depth: 2 });
		check(two.length === 4, 'list depth 2, relative to the home', two.map((e) => e.path));

		check(await s.files.exists('/home/user/t/a.txt'), 'exists');
		check(!(await s.files.exists('/home/user/t/nope')), 'not exists');
		const info = await s.files.getInfo('/home/user/t/b');
		check(info.type === 'dir' && info.name === 'b', 'getInfo dir', info);
		await throwsA(() => s.files.getInfo('/nope/nope'), FileNotFoundError, 'getInfo of nothing');

		check((await s.files.makeDir('/home/user/new/deep')) === true, 'makeDir (with parents)');
		check((await s.files.makeDir('/home/user/new/deep')) === false, 'makeDir twice: false');
		check((await s.files.getInfo('/home/user/new')).owner === 'user', 'made as user');

		const moved = await s.files.rename('/home/user/t/a.txt', '/home/user/moved/a2.txt');
		check(moved.path === '/home/user/moved/a2.txt' && moved.name === 'a2.txt', 'rename', moved);
		check((await s.files.read('/home/user/moved/a2.txt')) === 'a', 'renamed content');
		check(!(await s.files.exists('/home/user/t/a.txt')), 'old name gone');
		await throwsA(() => s.files.rename('/home/user/nope', '/home/user/x'), FileNotFoundError, 'rename of nothing');

		await s.files.remove('/home/user/t');
		check(!(await s.files.exists('/home/user/t/b/d/e.txt')), 'remove a tree');
		// envd's Remove is os.RemoveAll: what is not there is removed already
		await s.files.remove('/home/user/t');
		await s.files.remove('no_such_file.txt');
		// as user, /etc is not writable
		await throwsA(() => s.files.makeDir('/etc/nope'), Error, 'makeDir where user may not');

		// a symlink pointing "out" (to /) points into the environment
		await s.commands.run('ln -s / /home/user/out && ln -s ../../../../../../etc /home/user/etc2');
		const ln = await s.files.getInfo('/home/user/out');
		check(ln.type === 'symlink' && ln.symlinkTarget === '/', 'a symlink is described, not followed', ln);
		const via = await s.files.read('/home/user/etc2/hostname');
		check(via === (await s.files.read('/etc/hostname')), 'through the link: the environment\'s own /etc');
		await s.files.remove('/home/user/out');
		check(await s.files.exists('/etc/hostname'), 'removing the link removed only the link');
		const cross = await s.files.list('/home/user/etc2', { depth: 1 });
		check(cross.some((e) => e.name === 'passwd'), 'listing through a link', cross.length);
		// the environment's passwd (it has `user`; the host's has not)
		check(/^user:x:1000:/m.test(await s.files.read('/home/user/etc2/passwd')), "through the link: the environment's passwd");
	},

	// Signed URLs: uploadUrl/downloadUrl, with and without expiry, and the
	// refusals: wrong signature, expired, another sandbox's, another path.
	async signed() {
		const a = await create({ secure: true });
		const b = await create({ secure: true });
		const up = await a.uploadUrl('/home/user/up.txt');
		check(!up.includes(a.envdAccessToken), 'the token is not in the URL');
		const form = new FormData();
		form.append('file', new Blob(['uploaded']), 'ignored-name');
		let r = await fetch(up, { method: 'POST', body: form });
		check(r.status === 200, 'upload through the signed URL', [r.status, await r.text()]);
		check((await a.files.read('/home/user/up.txt')) === 'uploaded', 'uploaded content');

		const down = await a.downloadUrl('/home/user/up.txt', { useSignatureExpiration: 60 });
		r = await fetch(down);
		check(r.status === 200 && (await r.text()) === 'uploaded', 'download through the signed URL');

		// a wrong signature
		const bad = new URL(down);
		bad.searchParams.set('signature', 'v1_' + 'A'.repeat(43));
		r = await fetch(bad);
		check(r.status === 401 && /invalid signature/.test(await r.text()), 'wrong signature: 401', r.status);
		// the signature of another path
		const other = new URL(down);
		other.searchParams.set('path', '/etc/passwd');
		r = await fetch(other);
		check(r.status === 401, 'signature for another path: 401', r.status);
		// a signature for read used to write
		r = await fetch(down, { method: 'POST', body: form });
		check(r.status === 401, 'read signature used to write: 401', r.status);
		// A forged upload is refused from its headers: the server does not
		// read the 32 MiB it announces (and never sent) first.
		const forged = new URL(up);
		forged.searchParams.set('signature', 'v1_' + 'A'.repeat(43));
		const t0 = Date.now();
		const head = await rawHeaders(forged, 'POST', { 'Content-Type': 'application/octet-stream', 'Content-Length': String(32 << 20) });
		check(/^HTTP\/1\.[01] 401 /.test(head), 'a forged upload is refused before its body', head.slice(0, 80));
		check(Date.now() - t0 < 10000, 'the refusal comes at once', Date.now() - t0);
		// expired
		const old = await a.downloadUrl('/home/user/up.txt', { useSignatureExpiration: -10 });
		r = await fetch(old);
		check(r.status === 401 && /expired/.test(await r.text()), 'expired signature: 401', r.status);
		// a's signed URL with b named in the header
		r = await fetch(down, { headers: { 'E2b-Sandbox-Id': b.sandboxId, 'E2b-Sandbox-Port': '49983' } });
		check(r.status === 401, "a's signature for b: 401", r.status);
		// b's download URL does not read a's file: it reads b's
		await b.files.write('/home/user/up.txt', 'b side');
		r = await fetch(await b.downloadUrl('/home/user/up.txt'));
		check((await r.text()) === 'b side', "b's URL reads b");
		// killed: 502
		await a.kill();
		r = await fetch(down);
		check(r.status === 401, 'signed URL of a killed sandbox: 401 (no live sandbox signs it)', r.status);
	},

	// File metadata (envd 0.6.2): X-Metadata-* on upload as user.e2b.*
	// xattrs, keys lowercased, shown by write, getInfo, list and rename, and
	// one set inside the sandbox out of band; refusals of bad headers.
	async metadata() {
		const s = await create();
		const w = await s.files.write('/home/user/md.txt', 'x', { metadata: { Owner: 'alice', 'build.id': '42' } });
		check(w.metadata?.owner === 'alice' && w.metadata?.['build.id'] === '42', 'write reports the metadata, keys lowercased', w);
		let i = await s.files.getInfo('/home/user/md.txt');
		check(i.metadata?.owner === 'alice' && i.metadata?.['build.id'] === '42', 'getInfo shows it', i);
		const l = await s.files.list('/home/user');
		check(l.find((e) => e.name === 'md.txt')?.metadata?.owner === 'alice', 'list shows it', l);
		const r = await s.files.rename('/home/user/md.txt', '/home/user/md2.txt');
		check(r.metadata?.owner === 'alice', 'rename keeps it', r);
		// multipart (several files) carries the same metadata to each
		const ws = await s.files.write([{ path: '/home/user/m1', data: 'a' }, { path: '/home/user/m2', data: 'b' }], { metadata: { k: 'v' } });
		check(ws.length === 2 && ws.every((f) => f.metadata?.k === 'v'), 'metadata on every file of a multi-file write', ws);
		// none: undefined, not {}
		await s.files.write('/home/user/plain.txt', 'p');
		i = await s.files.getInfo('/home/user/plain.txt');
		check(i.metadata === undefined, 'a file without metadata has none', i);
		// set out of band inside the sandbox, by its user
		await s.commands.run(`python3 -c "import os; os.setxattr('/home/user/plain.txt', 'user.e2b.oob', b'yes'); os.setxattr('/home/user/plain.txt', 'user.other', b'z')"`);
		i = await s.files.getInfo('/home/user/plain.txt');
		check(i.metadata?.oob === 'yes' && !('other' in (i.metadata ?? {})), 'only user.e2b.* is metadata, set by anyone', i);
		// an overwrite replaces the metadata with its own: none clears it, other attributes stay
		const ow = await s.files.write('/home/user/plain.txt', 'again');
		check(ow.metadata === undefined, 'an overwrite without metadata clears it', ow);
		i = await s.files.getInfo('/home/user/plain.txt');
		check(i.metadata === undefined, 'getInfo after the overwrite: none', i);
		const keep = await s.commands.run(`python3 -c "import os; print(os.getxattr('/home/user/plain.txt', 'user.other').decode())"`);
		check(keep.stdout === 'z\n', 'an attribute outside user.e2b.* stays', keep.stdout);
		await s.files.write('/home/user/md2.txt', 'new', { metadata: { fresh: '1' } });
		i = await s.files.getInfo('/home/user/md2.txt');
		check(i.metadata?.fresh === '1' && !('owner' in i.metadata), 'an overwrite with metadata has only its own', i);
		// refusals the SDK would not send: too long, not printable ASCII, too many
		const tok = { id: s.sandboxId, token: s.envdAccessToken };
		let res = await files('POST', { path: '/home/user/bad' }, { ...tok, body: 'x', headers: { 'Content-Type': 'application/octet-stream', 'X-Metadata-k': 'v'.repeat(5000) } });
		check(res.status === 400 && /metadata/.test(res.body.toString()), 'a metadata value over 4 KiB: 400', [res.status, res.body.toString()]);
		res = await files('POST', { path: '/home/user/bad' }, { ...tok, body: 'x', headers: { 'Content-Type': 'application/octet-stream', 'X-Metadata-k': 'a\tb' } });
		check(res.status === 400, 'a metadata value with a tab: 400', [res.status, res.body.toString()]);
		const many = {};
		for (let n = 0; n < 65; n++) many[`X-Metadata-k${n}`] = 'v';
		res = await files('POST', { path: '/home/user/bad' }, { ...tok, body: 'x', headers: { 'Content-Type': 'application/octet-stream', ...many } });
		check(res.status === 400 && /more than 64/.test(res.body.toString()), '65 metadata headers: 400', [res.status, res.body.toString()]);
		check(!(await s.files.exists('/home/user/bad')), 'a refused upload wrote nothing');
	},

	// files.watchDir (filesystem.Filesystem/WatchDir): events as envd names
	// and types them, recursive or not, what it refuses, links not followed
	// out of the tree; and the polled watchers (CreateWatcher,
	// GetWatcherEvents, RemoveWatcher) bound to their sandbox.
	async watch() {
		const a = await create();
		const b = await create();
		await a.files.makeDir('/home/user/w');
		const got = [];
		const seen = (name, type) => got.some((e) => e.name === name && e.type === type);
		async function until(what, cond) {
			for (let i = 0; i < 100 && !cond(); i++) await new Promise((r) => setTimeout(r, 50));
			check(cond(), what, got);
		}
		let h = await a.files.watchDir('/home/user/w', (e) => got.push(e));
		await a.files.write('/home/user/w/a.txt', 'one');
		await until('write of a.txt: create and write', () => seen('a.txt', 'create') && seen('a.txt', 'write'));
		await a.commands.run('mv /home/user/w/a.txt /home/user/w/b.txt && chmod 600 /home/user/w/b.txt && rm /home/user/w/b.txt');
		await until('rename, create, chmod, remove', () => seen('a.txt', 'rename') && seen('b.txt', 'create') && seen('b.txt', 'chmod') && seen('b.txt', 'remove'));
		// not recursive: a file in a new subdirectory is not reported, the directory is
		await a.commands.run('mkdir /home/user/w/sub && echo x > /home/user/w/sub/deep.txt');
		await until('the subdirectory made', () => seen('sub', 'create'));
		await new Promise((r) => setTimeout(r, 300));
		check(!got.some((e) => e.name.includes('deep')), 'not recursive: nothing from under sub', got);
		await h.stop();
		// recursive: from directories there and made later, named by their path under the root
		got.length = 0;
		await a.commands.run('ln -s /tmp /home/user/w/link');
		h = await a.files.watchDir('/home/user/w', (e) => got.push(e), { recursive: true });
		await a.files.write('/home/user/w/sub/deep.txt', 'two');
		await until('a file in an existing subdirectory', () => seen('sub/deep.txt', 'write'));
		await a.commands.run('mkdir -p /home/user/w/new/er && echo x > /home/user/w/new/er/f');
		await until('a directory made later, and a file in it', () => seen('new', 'create'));
		await a.commands.run('echo y > /home/user/w/new/er/g');
		await until('a file two levels under a new directory', () => seen('new/er/g', 'create'));
		// a link to a directory elsewhere is not followed
		await a.commands.run('echo z > /tmp/outside.txt');
		await new Promise((r) => setTimeout(r, 300));
		check(!got.some((e) => e.name.startsWith('link/')), 'a symlinked directory is not watched through', got);
		await h.stop();
		// includeEntry: each event carries the entry as getInfo shows it
		got.length = 0;
		h = await a.files.watchDir('/home/user/w', (e) => got.push(e), { includeEntry: true });
		await a.files.write('/home/user/w/withentry.txt', 'four');
		await until('an event with its entry', () => got.some((e) => e.name === 'withentry.txt' && e.type === 'write' && e.entry?.size === 4 && e.entry?.type === 'file' && e.entry?.owner === 'user'));
		await h.stop();
		// refusals: no such directory, a file
		await throwsA(() => a.files.watchDir('/home/user/nothere', () => {}), FileNotFoundError, 'watching a missing directory');
		await a.files.write('/home/user/file.txt', 'f');
		await throwsA(() => a.files.watchDir('/home/user/file.txt', () => {}), null, 'watching a file');
		// /root is not the user's: refused as the user
		await throwsA(() => a.files.watchDir('/root', () => {}), null, "watching a directory the user cannot read");

		// the polled form, as the Python SDK uses it
		const call = async (s, method, body, token = s.envdAccessToken, id = s.sandboxId) => {
			const r = await fetch(`${url}/filesystem.Filesystem/${method}`, {
				method: 'POST',
				headers: { 'Content-Type': 'application/json', 'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': token },
				body: JSON.stringify(body),
			});
			return { status: r.status, body: await r.json().catch(() => null) };
		};
		let r = await call(a, 'CreateWatcher', { path: '/home/user/w', recursive: true });
		check(r.status === 200 && typeof r.body.watcherId === 'string', 'CreateWatcher', r);
		const wid = r.body.watcherId;
		await a.files.write('/home/user/w/sub/polled.txt', 'p');
		let events = [];
		for (let i = 0; i < 50 && !events.some((e) => e.name === 'sub/polled.txt'); i++) {
			r = await call(a, 'GetWatcherEvents', { watcherId: wid });
			check(r.status === 200, 'GetWatcherEvents', r);
			events = events.concat(r.body.events ?? []);
			await new Promise((res) => setTimeout(res, 50));
		}
		check(events.some((e) => e.name === 'sub/polled.txt' && e.type === 'EVENT_TYPE_WRITE'), 'polled events', events);
		r = await call(a, 'GetWatcherEvents', { watcherId: wid });
		check(r.status === 200 && (r.body.events ?? []).length === 0, 'events are handed out once', r);
		// another sandbox cannot read or remove a's watcher, with its own token or a's
		r = await call(b, 'GetWatcherEvents', { watcherId: wid });
		check(r.status === 404, "b reads a's watcher: not found", r);
		r = await call(b, 'RemoveWatcher', { watcherId: wid });
		check(r.status === 404, "b removes a's watcher: not found", r);
		r = await call(a, 'GetWatcherEvents', { watcherId: wid }, b.envdAccessToken);
		check(r.status === 401, "b's token for a: 401", r.status);
		r = await call(a, 'GetWatcherEvents', { watcherId: 'nosuch' });
		check(r.status === 404, 'an unknown watcher: not found', r);
		r = await call(a, 'RemoveWatcher', { watcherId: wid });
		check(r.status === 200, 'RemoveWatcher', r);
		r = await call(a, 'GetWatcherEvents', { watcherId: wid });
		check(r.status === 404, 'a removed watcher: not found', r);
		r = await call(a, 'CreateWatcher', { path: '/home/user/nothere' });
		check(r.status === 404, 'CreateWatcher of a missing directory: not found', r);
		// a watch ends with its sandbox
		got.length = 0;
		let ended = false;
		h = await a.files.watchDir('/home/user/w', (e) => got.push(e), { onExit: () => { ended = true; } });
		await a.kill();
		for (let i = 0; i < 100 && !ended; i++) await new Promise((res) => setTimeout(res, 50));
		check(ended, 'the watch ended with its sandbox');
	},

	// A watch whose sandbox is killed (by its handle or by another client) or
	// times out is cut, as envd's connection goes with its VM: no clean end,
	// so the SDK asks /health (502) and onExit gets its TimeoutError "killed
	// or reached its end of life", as for a command's stream. A watch that
	// ended cleanly would tell the caller that nothing went wrong.
	async watch_killed() {
		const killedMsg = 'sandbox was killed or reached its end of life';
		async function watched(s) {
			await s.files.makeDir('/home/user/w');
			const w = { ended: false, err: undefined };
			await s.files.watchDir('/home/user/w', () => {}, { onExit: (e) => { w.ended = true; w.err = e; } });
			return w;
		}
		async function ended(w, what, ms = 10_000) {
			for (let t0 = Date.now(); !w.ended && Date.now() - t0 < ms;) await new Promise((r) => setTimeout(r, 50));
			check(w.ended, `${what}: the watch ended`);
			check(w.err instanceof TimeoutError && w.err.message.includes(killedMsg), `${what}: onExit has the killed error`, `${w.err?.name}: ${w.err?.message}`);
		}
		const a = await create();
		const wa = await watched(a);
		await a.kill();
		await ended(wa, 'killed by its handle');
		const b = await create();
		const wb = await watched(b);
		await Sandbox.kill(b.sandboxId);
		await ended(wb, 'killed by another client');
		const c = await create({ timeoutMs: 3000 });
		const wc = await watched(c);
		await ended(wc, 'timed out', 25_000);
	},

	// Paths that climb out, symlinks that point out, another sandbox's token,
	// oversized and truncated bodies, NUL and non-UTF-8 paths.
	async attacks() {
		const a = await create();
		const b = await create();
		const tok = { id: a.sandboxId, token: a.envdAccessToken };
		// climbing: ../ and absolute paths stay inside the environment
		await b.files.write('/tmp/b-only', 'b secret');
		for (const p of ['/../../../../etc/hostname', '../../../../../../etc/hostname', '/tmp/../../../../proc/1/root/etc/hostname']) {
			const r = await files('GET', { path: p }, tok);
			check(r.status === 200 || r.status === 403 || r.status === 404, `climb ${p}`, r.status);
			if (r.status === 200) {
				// it is the environment's own /etc/hostname, not the host's or another's
				const own = await files('GET', { path: '/etc/hostname' }, tok);
				check(Buffer.compare(r.body, own.body) === 0, `climb ${p} reads the environment's own file`);
			}
		}
		const up = await files('POST', { path: '/../../../../tmp/escaped.txt' }, {
			...tok,
			body: 'x',
			headers: { 'Content-Type': 'application/octet-stream' },
		});
		check(up.status === 200 && JSON.parse(up.body)[0].path === '/../../../../tmp/escaped.txt'.replace(/^(\/\.\.)+/, ''), 'climbing write lands inside', up.body.toString());
		// a symlink inside pointing "out" points into the environment itself
		await a.files.write('/tmp/marker', 'a marker', { user: 'root' });
		const ln = await files('POST', { path: '/tmp/ln-probe' }, { ...tok, body: 'x', headers: { 'Content-Type': 'application/octet-stream' } });
		check(ln.status === 200, 'probe write');
		// b's file is not reachable from a by any path
		const cross = await files('GET', { path: '/tmp/b-only' }, tok);
		check(cross.status === 404, "b's file is not in a", cross.status);
		// another sandbox's token
		const other = await files('GET', { path: '/etc/hostname' }, { id: a.sandboxId, token: b.envdAccessToken });
		check(other.status === 401, "b's token on a: 401", other.status);
		const none = await files('GET', { path: '/etc/hostname' }, { id: a.sandboxId });
		check(none.status === 401, 'no token: 401', none.status);
		const wr = await files('POST', { path: '/tmp/w' }, { id: a.sandboxId, token: b.envdAccessToken, body: 'x', headers: { 'Content-Type': 'application/octet-stream' } });
		check(wr.status === 401, "b's token writing a: 401", wr.status);
		// oversized upload: a clear 413
		const big = Buffer.alloc(32 * 1024 * 1024 + 1, 0x61);
		const tl = await files('POST', { path: '/tmp/big' }, { ...tok, body: big, headers: { 'Content-Type': 'application/octet-stream' } });
		check(tl.status === 413 && /limit/i.test(tl.body.toString()), 'oversized upload: 413', [tl.status, tl.body.toString()]);
		// a gzip bomb past the limit
		const { gzipSync } = await import('node:zlib');
		const bomb = gzipSync(Buffer.alloc(40 * 1024 * 1024));
		const gb = await files('POST', { path: '/tmp/bomb' }, { ...tok, body: bomb, headers: { 'Content-Type': 'application/octet-stream', 'Content-Encoding': 'gzip' } });
		check(gb.status === 413, 'gzip bomb: 413', [gb.status, gb.body.toString()]);
		// truncated multipart
		const trunc = multipart('bnd', [['/tmp/t.txt', 'partial']], { close: false });
		const tr = await files('POST', {}, { ...tok, body: trunc, headers: { 'Content-Type': 'multipart/form-data; boundary=bnd' } });
		check(tr.status === 400 && /truncated/.test(tr.body.toString()), 'truncated multipart: 400', [tr.status, tr.body.toString()]);
		// a NUL in a part's filename
		const nul = multipart('bnd', [['/tmp/a\0b', 'x']]);
		const nr = await files('POST', {}, { ...tok, body: nul, headers: { 'Content-Type': 'multipart/form-data; boundary=bnd' } });
		check(nr.status === 400, 'NUL in a filename: 400', [nr.status, nr.body.toString()]);
		// a filename that is not UTF-8
		const latin = Buffer.concat([Buffer.from('--bnd\r\nContent-Disposition: form-data; name="file"; filename="/tmp/\xff\xfe"\r\n\r\nx\r\n--bnd--\r\n', 'latin1')]);
		const lr = await files('POST', {}, { ...tok, body: latin, headers: { 'Content-Type': 'multipart/form-data; boundary=bnd' } });
		check(lr.status === 400 && /UTF-8/.test(lr.body.toString()), 'non-UTF-8 filename: 400', [lr.status, lr.body.toString()]);
		const lq = await fetch(`${url}/files?path=%2Ftmp%2F%FF`, { headers: { 'E2b-Sandbox-Id': a.sandboxId, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': a.envdAccessToken } });
		check(lq.status === 400, 'non-UTF-8 path query: 400', lq.status);
		// no such sandbox: 502
		const gone = await files('GET', { path: '/etc/hostname' }, { id: 'nosuchsandbox', token: a.envdAccessToken });
		check(gone.status === 502, 'unknown sandbox: 502', gone.status);
	},
};

const fn = cases[name];
if (!fn) {
	console.error(`unknown case '${name}'; cases: ${Object.keys(cases).join(', ')}`);
	process.exit(2);
}
try {
	await fn();
} finally {
	for (const s of created) await s.kill().catch(() => {});
}
