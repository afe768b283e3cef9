import assert from 'node:assert/strict';
import { parseGoDuration } from '../../src/config/duration.ts';

describe('config: Go durations', () => {
  // What Go's time.ParseDuration makes of each, in milliseconds.
  const valid: [text: string, ms: number][] = [
    ['2m0s', 120_000],
    ['300ms', 300],
    ['1h30m', 5_400_000],
    ['5m', 300_000],
    ['1.5h', 5_400_000],
    ['.5s', 500],
    ['1.s', 1_000],
    ['1m30.5s', 90_500],
    ['1500us', 1.5],
    ['1500µs', 1.5],
    ['2000000ns', 2],
    ['1h1m1s1ms', 3_661_001],
    ['0', 0],
    ['0s', 0],
    ['+5s', 5_000],
    ['-1m', -60_000],
  ];
  for (const [text, ms] of valid) {
    it(`${text} is ${ms}ms`, () => assert.equal(parseGoDuration(text), ms));
  }

  for (const text of ['', '5', '-', 's', '.s', '5 m', ' 5m', '1d', '1.5.5s', '5M', '1h 30m', '3000000h']) {
    it(`refuses ${JSON.stringify(text)}`, () => assert.equal(parseGoDuration(text), undefined));
  }
});
