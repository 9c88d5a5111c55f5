import { checkSvg, SvgRefusal } from '../../src/modules/pictures/svg/pipeline.js';

/** The refusal the SVG checks give `text`; fails when they accept it or throw anything else. */
export function svgRefusal(text: string): SvgRefusal {
  try {
    void checkSvg(text);
  } catch (error) {
    if (error instanceof SvgRefusal) return error;
    throw error;
  }
  throw new Error('accepted');
}
