// The weeder's resync merge now lives in the informer (src/kube/informer.ts),
// the one watch mechanism; re-exported for the code that imports it from here.
export { mergeNewest } from '../kube/informer.ts';
