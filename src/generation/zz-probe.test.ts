import { it } from 'vitest';
import { createSiblingPicker } from './page-siblings.ts';
import type { SiblingCandidate } from './page-siblings.ts';
it('probe', () => {
	const big: SiblingCandidate[] = [];
	for (let c = 0; c < 20; c++) for (let i = 0; i < 500; i++) big.push({ route: `/topic-${c}/page-${i}`, title: `page ${i}`, cluster: `cluster ${c}`, primary_keyword: `topic ${c} guide number ${i % 37} cost`, priority: 1 + (i % 5) });
	let t = performance.now();
	const pick = createSiblingPicker(big);
	console.log('index', performance.now() - t);
	t = performance.now();
	for (const item of big) pick(item);
	console.log('pick all', performance.now() - t);
});
