/** What the API shows for an internal status; null means the order is not listed. */
export type ListedStatus = 'finished' | 'processing';

export function listedStatusOf(internalStatus: string): ListedStatus | null {
  switch (internalStatus) {
    case 'publishing':
    case 'publishing_ended':
      return 'processing';
    case 'finished':
      return 'finished';
    default:
      // draft, pending, cancelled and any status upstream adds later
      return null;
  }
}
