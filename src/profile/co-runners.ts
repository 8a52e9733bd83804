/**
 * Everything `veltair profile` needs from the interference generator, in one file so that the
 * move of the noise code into its own room (issue #10) re-points imports here only: which cores
 * exist, which co-runner each level is, what it moves on its own, and a bank of stopped
 * co-runners switched around each measurement.
 */
export { availableCores, levelSpec, readL3Bytes } from '../measure/noise.js';
export { openLevelBank, planCores, type LevelBank } from '../tune/levels.js';
export { profileCoRunners } from '../runtime/proxy-calibrate.js';
