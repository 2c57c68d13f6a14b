// The stream's sound (an offer URL with audio=1): browsers play no sound
// before the person acts on the page, so the video starts muted and a
// "Click for sound" button waits; once clicked it is a mute toggle with a
// level meter. The body's data-sound says where it stands (none, off,
// on, muted) for the style and the tests.

export class Sound {
	constructor({ doc, video, button, level }) {
		this.doc = doc;
		this.video = video;
		this.button = button;
		this.level = level;
		this.stream = null;
		this.ctx = null;
		this.analyser = null;
		this.samples = null;
		this.frame = 0;
		this.allowed = false; // the person clicked for sound once
		button.addEventListener('click', () => this.toggle());
		this.set('none');
	}

	// wanted says whether an offer URL asks for sound.
	static wanted(offerURL) {
		try {
			return new URL(offerURL, globalThis.location ? location.href : undefined).searchParams.get('audio') === '1';
		} catch {
			return false;
		}
	}

	// onTrack is told of the stream once it has an audio track.
	onTrack(stream) {
		this.stream = stream;
		if (this.analyser && this.source && this.source.mediaStream !== stream) {
			this.meter(); // a new connection's stream: measure that one
		}
		if (!this.allowed) {
			this.set('off');
		}
	}

	toggle() {
		if (!this.allowed) {
			this.allowed = true;
			this.video.muted = false;
			this.video.play().catch(() => {});
			this.meter();
		} else {
			this.video.muted = !this.video.muted;
		}
		this.set(this.video.muted ? 'muted' : 'on');
	}

	set(state) {
		this.doc.body.dataset.sound = state;
		this.button.hidden = state === 'none';
		const label = { off: 'Click for sound', on: 'Mute', muted: 'Unmute' }[state] || '';
		this.button.querySelector('span').textContent = state === 'off' ? label : '';
		this.button.title = label;
		this.button.setAttribute('aria-label', label);
		if (state !== 'on') {
			this.level.style.transform = 'scaleX(0)';
		}
	}

	// meter measures the sound's level with an analyser, started from the
	// click (an AudioContext made before any gesture stays suspended).
	meter() {
		if (!this.stream || this.stream.getAudioTracks().length === 0) {
			return;
		}
		try {
			this.ctx = this.ctx || new AudioContext();
			if (this.source) {
				this.source.disconnect();
			}
			this.source = this.ctx.createMediaStreamSource(this.stream);
			this.analyser = this.ctx.createAnalyser();
			this.analyser.fftSize = 1024;
			this.samples = new Float32Array(this.analyser.fftSize);
			this.source.connect(this.analyser); // not to the output: the video plays it
		} catch {
			return; // no WebAudio: the sound plays, unmeasured
		}
		this.ctx.resume().catch(() => {});
		if (!this.frame) {
			this.tick();
		}
	}

	tick() {
		this.frame = requestAnimationFrame(() => this.tick());
		if (this.video.muted || !this.analyser) {
			return;
		}
		this.analyser.getFloatTimeDomainData(this.samples);
		let sum = 0;
		for (const s of this.samples) {
			sum += s * s;
		}
		const rms = Math.sqrt(sum / this.samples.length);
		// dBFS from -60 to 0 across the meter.
		const db = rms > 0 ? 20 * Math.log10(rms) : -100;
		const width = Math.max(0, Math.min(1, (db + 60) / 60));
		this.level.style.transform = `scaleX(${width.toFixed(3)})`;
		this.doc.body.dataset.soundLevel = rms.toFixed(4);
	}
}
