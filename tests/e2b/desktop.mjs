// E2B's official @e2b/desktop (2.4.0, unchanged) against `sbx serve`:
// Sandbox.create() with its default template desktop (or the template named
// as the first argument), which starts Xvfb and an XFCE session inside the
// sandbox over commands.run; then screenshot, the mouse and the keyboard.
// Usage: node desktop.mjs [TEMPLATE], with E2B_API_URL, E2B_SANDBOX_URL and
// E2B_API_KEY pointing at the server. Exits non-zero with a message on the
// first failed check; kills what it creates.
import { Sandbox } from '@e2b/desktop';

const [template] = process.argv.slice(2);

function check(cond, msg, extra) {
	if (!cond) throw new Error(`check failed: ${msg}${extra === undefined ? '' : `: ${JSON.stringify(extra)}`}`);
}

let s;
try {
	const t0 = Date.now();
	s = template ? await Sandbox.create(template) : await Sandbox.create();
	console.log(`created ${s.sandboxId} in ${Date.now() - t0} ms`);
	if (!template) check((await s.getInfo()).templateId === 'desktop', 'template id', (await s.getInfo()).templateId);
	const png = await s.screenshot();
	check(png[0] === 0x89 && String.fromCharCode(...png.slice(1, 4)) === 'PNG', 'a PNG');
	const dv = new DataView(png.buffer, png.byteOffset);
	check(dv.getUint32(16) === 1024 && dv.getUint32(20) === 768, 'PNG size', [dv.getUint32(16), dv.getUint32(20)]);
	const size = await s.getScreenSize();
	check(size.width === 1024 && size.height === 768, 'screen size', size);
	await s.moveMouse(200, 150);
	check(JSON.stringify(await s.getCursorPosition()) === '{"x":200,"y":150}', 'cursor after move', await s.getCursorPosition());
	// Type into an xterm that writes the line it reads.
	await s.commands.run("xterm -geometry 80x10+0+0 -e sh -c 'read l; printf %s \"$l\" > /tmp/typed'", { background: true });
	check(await s.waitAndVerify('xdotool search --class xterm', (r) => r.exitCode === 0, 20), 'xterm shown');
	await s.leftClick(100, 60);
	await s.write('hello $(id) `x`');
	await s.press('enter');
	check(await s.waitAndVerify('test -s /tmp/typed', (r) => r.exitCode === 0, 10), 'typed line written');
	const typed = await s.files.read('/tmp/typed');
	check(typed === 'hello $(id) `x`', 'typed text', typed);
	if (process.env.SBX_DESKTOP_STREAM === '1') {
		// The live view: x11vnc and noVNC inside, noVNC's page through the port proxy.
		await s.stream.start();
		check(s.stream.getUrl().includes(`6080-${s.sandboxId}`), 'stream URL', s.stream.getUrl());
		const res = await fetch(`${process.env.E2B_SANDBOX_URL}/vnc.html`, {
			headers: { 'E2b-Sandbox-Id': s.sandboxId, 'E2b-Sandbox-Port': '6080', 'E2b-Traffic-Access-Token': s.trafficAccessToken ?? '' },
		});
		const page = await res.text();
		check(res.status === 200 && page.includes('noVNC'), 'noVNC page through the proxy', [res.status, page.slice(0, 100)]);
		await s.stream.stop();
		console.log('stream ok');
	}
	console.log('desktop ok');
} finally {
	if (s) await s.kill();
}
